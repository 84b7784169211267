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
)

func newWebhookConfigCommand(opts *globalOptions, s streams) *cobra.Command {
	var configPath, service, baseURL, caFile, name string
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
serving certificate (with --service and cert-manager's CA injector it may be
left out).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return inputErrorf("--config is required: the host configuration whose modules to register")
			}
			ep, err := webhookEndpoint(service, baseURL, caFile)
			if err != nil {
				return err
			}
			file, err := config.Load(configPath)
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
			mc, vc, err := admission.WebhookConfigurations(name, mods, ep)
			if err != nil {
				return inputError(err)
			}
			if mc == nil && vc == nil {
				return inputErrorf("%s: no module has an admit hook: there is nothing to register", file.Path)
			}
			var objs []any
			if mc != nil {
				objs = append(objs, mc)
			}
			if vc != nil {
				objs = append(objs, vc)
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
	f.StringVar(&service, "service", "", "the Service in front of the host's webhook server, NAMESPACE/NAME[:PORT] (port default 443)")
	f.StringVar(&baseURL, "url", "", "the webhook server's base URL, https://HOST[:PORT], when there is no Service")
	f.StringVar(&caFile, "ca-bundle", "", "PEM file of the CA that signed the webhook's serving certificate")
	f.StringVar(&name, "name", "kubeplug", "name of the webhook configurations")
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
