package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/host/admission"
	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/internal/input"
	"github.com/kubeplug/kubeplug/host/webhookcert"
)

func newWebhookConfigCommand(opts *globalOptions, s streams) *cobra.Command {
	var configPath, modulesDir, service, baseURL, caFile, name, certManager string
	var selfManaged, certManagerObjects bool
	cmd := &cobra.Command{
		Use:   "webhook-config --config host.yaml (--service NS/NAME[:PORT] | --url URL) [--ca-bundle FILE]",
		Short: "Print the webhook configurations that register the modules' admit hooks",
		Long: `Webhook-config loads every module of the host configuration as kubeplug run
would, and prints, as YAML for kubectl apply, a MutatingWebhookConfiguration for
the modules whose admit hook mutates and a ValidatingWebhookConfiguration for
the others: rules and matchConditions from each module's manifest,
failurePolicy and timeoutSeconds from its entry's admission: settings,
sideEffects None, admissionReviewVersions [v1], path /admit/<module>. Entries in
shadow mode are left out: kubeplug run does not serve their admit hooks. The API
server reaches the host through --service (a Service in front of kubeplug run
--webhook-addr) or at --url; --ca-bundle is the PEM of the CA that signed the
serving certificate.

The API server must trust the webhook's serving certificate. Give one of:
  --ca-bundle FILE          the caBundle, for a certificate you make yourself;
  --self-managed            the host makes and rotates it (kubeplug run
                            --webhook-cert-secret) and patches the caBundle
                            of these configurations itself;
  --cert-manager NS/CERT    cert-manager's CA injector fills in the caBundle
                            from the Certificate NS/CERT (annotation
                            cert-manager.io/inject-ca-from); with
                            --cert-manager-objects a self-signed Issuer and
                            that Certificate for the Service are printed too.
Without any of them it warns on standard error: the API server would call the
webhook with no caBundle and, for a Service, fail every call.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return inputErrorf("--config is required: the host configuration whose modules to register")
			}
			ep, err := webhookEndpoint(service, baseURL, caFile)
			if err != nil {
				return err
			}
			trust, err := webhookTrust(ep, certManager, selfManaged, certManagerObjects)
			if err != nil {
				return err
			}
			file, err := config.LoadWith(configPath, config.Options{ModulesDir: modulesDir})
			if err != nil {
				return inputError(err)
			}
			log, err := opts.logger(s.err)
			if err != nil {
				return err
			}
			var mods []admission.WebhookModule
			for i := range file.Modules {
				c := &file.Modules[i]
				if c.Mode == config.ModeShadow {
					continue // kubeplug run does not serve a shadow module's admit hook
				}
				l, err := loadModule(cmd.Context(), opts, log, c.Path, c.Limits)
				if err != nil {
					if exitCode(err) == exitInput {
						return err
					}
					return inputError(fmt.Errorf("%s: module %s: %w", file.Path, c.Name, describeLoadError(c.Path, err)))
				}
				defer l.close(cmd.Context())
				granted, err := c.Accept(l.module.Manifest())
				if err != nil {
					return inputError(fmt.Errorf("%s: %w", file.Path, err))
				}
				mods = append(mods, admission.WebhookModule{
					Module: &admission.Module{
						Name: c.Name, Admitter: l.module, Granted: granted,
						FailurePolicy: c.FailurePolicy, Timeout: c.WebhookTimeout,
					},
					Namespaces: c.Namespaces,
				})
			}
			mc, vc, warnings, err := admission.WebhookConfigurations(name, mods, ep)
			if err != nil {
				return inputError(fmt.Errorf("%s: %w", file.Path, err))
			}
			for _, w := range warnings {
				fmt.Fprintln(s.err, "warning: "+w)
			}
			if mc == nil && vc == nil {
				return inputErrorf("%s: no module has an admit hook: there is nothing to register", file.Path)
			}
			var objs []any
			if mc != nil {
				mc.Annotations = trust.annotations
				objs = append(objs, mc)
			}
			if vc != nil {
				vc.Annotations = trust.annotations
				objs = append(objs, vc)
			}
			objs = append(objs, trust.objects...)
			if trust.warning != "" {
				fmt.Fprintln(s.err, "warning: "+trust.warning)
			}
			var docs []string
			for _, obj := range objs {
				b, err := yaml.Marshal(obj)
				if err != nil {
					return failure(fmt.Errorf("encode webhook configuration: %w", err))
				}
				docs = append(docs, string(b))
			}
			_, err = fmt.Fprint(s.out, strings.Join(docs, "---\n"))
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", "", "host configuration file (required)")
	f.StringVar(&modulesDir, "modules-dir", "", "read the modules the configuration names under /modules/ (the image's) from this directory, e.g. build/guests")
	f.StringVar(&service, "service", "", "the Service in front of the host's webhook server, NAMESPACE/NAME[:PORT] (port default 443)")
	f.StringVar(&baseURL, "url", "", "the webhook server's base URL, https://HOST[:PORT], when there is no Service")
	f.StringVar(&caFile, "ca-bundle", "", "PEM file of the CA that signed the webhook's serving certificate")
	f.StringVar(&name, "name", "kubeplug", "name of the webhook configurations")
	f.BoolVar(&selfManaged, "self-managed", false, "the host manages the certificate (kubeplug run --webhook-cert-secret) and patches the caBundle itself")
	f.StringVar(&certManager, "cert-manager", "", "NAMESPACE/NAME of the cert-manager Certificate whose CA cert-manager's CA injector puts in the caBundle")
	f.BoolVar(&certManagerObjects, "cert-manager-objects", false, "with --cert-manager and --service: also print a self-signed Issuer and the Certificate for the Service's DNS names")
	return cmd
}

// webhookEndpoint reads the flags that say where the API server reaches the
// host.
func webhookEndpoint(service, baseURL, caFile string) (admission.Endpoint, error) {
	var ep admission.Endpoint
	switch {
	case (service == "") == (baseURL == ""):
		return ep, inputErrorf("give exactly one of --service NAMESPACE/NAME[:PORT] and --url https://HOST[:PORT]")
	case service != "":
		nsName, port, hasPort := strings.Cut(service, ":")
		ns, n, ok := strings.Cut(nsName, "/")
		if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
			return ep, inputErrorf("--service %q: want NAMESPACE/NAME[:PORT], e.g. kubeplug-system/kubeplug-webhook", service)
		}
		ep.ServiceNamespace, ep.ServiceName = ns, n
		if hasPort {
			p, err := strconv.ParseUint(port, 10, 16)
			if err != nil || p == 0 {
				return ep, inputErrorf("--service %q: port %q is not a port number", service, port)
			}
			ep.ServicePort = int32(p)
		}
	default:
		ep.URL = baseURL
	}
	if caFile != "" {
		b, err := input.ReadFile(caFile, input.MaxSmallBytes, "CA bundle")
		if err != nil {
			return ep, inputErrorf("--ca-bundle: %w", err)
		}
		if !strings.Contains(string(b), "-----BEGIN CERTIFICATE-----") {
			return ep, inputErrorf("--ca-bundle %s: not a PEM certificate; give the CA certificate that signed the webhook's serving certificate", caFile)
		}
		ep.CABundle = b
	}
	return ep, nil
}

// CertManagerInjectAnnotation asks cert-manager's CA injector to fill in the
// caBundle of a webhook configuration from a Certificate's CA.
const CertManagerInjectAnnotation = "cert-manager.io/inject-ca-from"

// trustSetup is how the API server comes to trust the webhook.
type trustSetup struct {
	annotations map[string]string
	objects     []any  // cert-manager's Issuer and Certificate, to print
	warning     string // when nothing makes the API server trust it
}

// webhookTrust checks the trust flags of webhook-config against each other
// and the endpoint.
func webhookTrust(ep admission.Endpoint, certManager string, selfManaged, objects bool) (trustSetup, error) {
	var t trustSetup
	given := 0
	for _, b := range []bool{len(ep.CABundle) > 0, certManager != "", selfManaged} {
		if b {
			given++
		}
	}
	if given > 1 {
		return t, inputErrorf("give one of --ca-bundle, --self-managed and --cert-manager: each is a different way for the API server to trust the webhook")
	}
	if objects && certManager == "" {
		return t, inputErrorf("--cert-manager-objects prints the Certificate of --cert-manager: give --cert-manager NAMESPACE/NAME")
	}
	switch {
	case certManager != "":
		ref, err := parseRef("--cert-manager", certManager)
		if err != nil {
			return t, err
		}
		t.annotations = map[string]string{CertManagerInjectAnnotation: ref.String()}
		if objects {
			if ep.ServiceName == "" {
				return t, inputErrorf("--cert-manager-objects makes a certificate for the Service: give --service")
			}
			t.objects = certManagerObjectsFor(ref.Namespace, ref.Name, webhookcert.ServiceDNSNames(ep.ServiceNamespace, ep.ServiceName))
		}
	case given == 0:
		t.warning = "the webhook configurations carry no caBundle and nothing will fill it in: the API server cannot verify the webhook's certificate " +
			"(with --service every call fails). Give --ca-bundle FILE, or --self-managed (kubeplug run --webhook-cert-secret), or --cert-manager NAMESPACE/NAME"
		if ep.URL != "" {
			t.warning = "the webhook configurations carry no caBundle: the API server verifies the webhook at --url against its system roots only. " +
				"Give --ca-bundle FILE unless a public CA signed the webhook's certificate"
		}
	}
	return t, nil
}

// certManagerObjectsFor returns a self-signed Issuer and a Certificate
// namespace/name for dnsNames, kept in the Secret of the same name, as
// kubeplug run --webhook-cert-dir reads it once mounted.
func certManagerObjectsFor(namespace, name string, dnsNames []string) []any {
	issuer := name + "-selfsigned"
	return []any{
		map[string]any{
			"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
			"metadata": map[string]any{"name": issuer, "namespace": namespace},
			"spec":     map[string]any{"selfSigned": map[string]any{}},
		},
		map[string]any{
			"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
			"metadata": map[string]any{"name": name, "namespace": namespace},
			"spec": map[string]any{
				"secretName": name,
				"dnsNames":   dnsNames,
				"issuerRef":  map[string]any{"name": issuer, "kind": "Issuer"},
			},
		},
	}
}
