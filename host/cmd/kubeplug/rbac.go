package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubeplug/kubeplug/host/app"
	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/oci"
	"github.com/kubeplug/kubeplug/host/rbac"
)

func newRBACCommand(opts *globalOptions, s streams) *cobra.Command {
	var (
		configPath, serviceAccount, output, name string
		podNamespace, leaseNamespace, leaseName  string
		leaderElect                              bool
		certSecret, webhookConfigName            string
	)
	cmd := &cobra.Command{
		Use:   "rbac --config host.yaml [--service-account NS/NAME] [-o yaml|helm]",
		Short: "Print the least-privilege RBAC the host needs to run its configured modules",
		Long: `Rbac loads every module of the host configuration as kubeplug run would, and
prints the RBAC rules the host needs, and no more:

  - list and watch of the kinds its informers cache (namespaced kinds in
    shard.namespace when the configuration has one);
  - for each module in enforce mode, the writes its granted capabilities
    lead to (patch for owner references, finalizers, applyClaim and
    setPartition, patch of volumeclaimupdates/status, delete for
    deleteObject), the reads the executor makes before some of them, and
    events: in Roles of the module's namespaces when it has namespaces:,
    in the ClusterRole otherwise;
  - Secrets get, and reads of volumes, claims and classes, only when a
    module is granted deleteVolume and csiDrivers are configured;
  - namespaces list and watch when a module has an admit hook;
  - the host's own events in --pod-namespace, the leader Lease with
    --leader-elect, and its webhook certificate Secret and webhook
    configurations with --webhook-cert-secret.

Modules in shadow mode get reads only: the host writes nothing for them.
-o yaml (the default) prints a ClusterRole, Roles and their bindings to the
ServiceAccount for kubectl apply; -o helm prints the rules as the values
rbac.rules (the ClusterRole's) and rbac.namespacedRules (NAMESPACE: rules) of
charts/kubeplug. Run it again when the configuration or a module's manifest
changes: a module swapped in with more capabilities gets Forbidden errors
until the rules grow.`,
		Example: `  kubeplug rbac --config host.yaml | kubectl apply -f -
  kubeplug rbac --config host.yaml --leader-elect -o helm > rbac-values.yaml`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return inputErrorf("--config is required: the host configuration whose modules to derive RBAC for")
			}
			if output != "yaml" && output != "helm" {
				return inputErrorf("-o %q: want yaml or helm", output)
			}
			sa, err := parseRef("--service-account", serviceAccount)
			if err != nil {
				return err
			}
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				return inputErrorf("--name %q: %s", name, strings.Join(errs, "; "))
			}
			h := rbac.Host{PodNamespace: podNamespace}
			if h.PodNamespace == "" {
				h.PodNamespace = sa.Namespace
			}
			if leaderElect {
				h.Lease = &rbac.Ref{Namespace: leaseNamespace, Name: leaseName}
				if h.Lease.Namespace == "" {
					h.Lease.Namespace = h.PodNamespace
				}
			}
			if certSecret != "" {
				ref, err := parseRef("--webhook-cert-secret", certSecret)
				if err != nil {
					return err
				}
				h.WebhookCertSecret = &ref
				h.WebhookConfigs = rbac.WebhookConfigs{Mutating: webhookConfigName, Validating: webhookConfigName}
			}
			file, err := config.Load(configPath)
			if err != nil {
				return inputError(err)
			}
			h.CSIDrivers = len(file.CSIDrivers) > 0
			h.ShardNamespace = file.Shard.Namespace
			for i := range file.Modules {
				entry := &file.Modules[i]
				// The module the host would run, read as the host reads
				// it, and checked against its entry as the host checks it.
				src, err := oci.Fetch(cmd.Context(), entry, opts.fetchOptions())
				if err != nil {
					return inputError(err)
				}
				l, err := loadInput(cmd.Context(), opts, s, src.Name, src.Wasm, entry.Limits)
				if err != nil {
					return err
				}
				mod, err := app.EntryModule(entry, l.module)
				if err != nil {
					l.close(cmd.Context())
					return inputError(fmt.Errorf("%s: %w", file.Path, err))
				}
				man := l.module.Manifest()
				h.Modules = append(h.Modules, rbac.Module{
					Name: entry.Name, Subject: man.Subject, Hooks: slices.Clone(man.Hooks),
					Namespaces: entry.Namespaces, Granted: mod.Allowed, Shadow: mod.Shadow,
				})
				l.close(cmd.Context())
			}
			rules, err := rbac.Derive(h)
			if err != nil {
				return inputError(err)
			}
			var out []byte
			if output == "helm" {
				out, err = rbac.HelmValues(rules)
			} else {
				out, err = rbac.YAML(rules, name, sa)
			}
			if err != nil {
				return failure(err)
			}
			_, err = s.out.Write(out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", "", "host configuration file (required)")
	f.StringVar(&serviceAccount, "service-account", "kubeplug-system/kubeplug", "the host's ServiceAccount, NAMESPACE/NAME, that the roles are bound to")
	f.StringVarP(&output, "output", "o", "yaml", "yaml (RBAC objects for kubectl apply) or helm (values for charts/kubeplug)")
	f.StringVar(&name, "name", "kubeplug", "name of the ClusterRole, the Roles and their bindings")
	f.StringVar(&podNamespace, "pod-namespace", "", "namespace of the host's Pod, where its own events go (default: the ServiceAccount's)")
	f.BoolVar(&leaderElect, "leader-elect", false, "the host runs with --leader-elect: add its Lease")
	f.StringVar(&leaseNamespace, "leader-elect-namespace", "", "namespace of the leader Lease (default: --pod-namespace)")
	f.StringVar(&leaseName, "leader-elect-name", "kubeplug", "name of the leader Lease")
	f.StringVar(&certSecret, "webhook-cert-secret", "", "the host runs with --webhook-cert-secret NAMESPACE/NAME: add that Secret and the webhook configurations")
	f.StringVar(&webhookConfigName, "webhook-config-name", "kubeplug", "name of the webhook configurations whose caBundle the host patches (kubeplug webhook-config --name)")
	return cmd
}

// parseRef reads a NAMESPACE/NAME flag.
func parseRef(flag, v string) (rbac.Ref, error) {
	ns, n, ok := strings.Cut(v, "/")
	if !ok || strings.Contains(n, "/") || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(n)) > 0 {
		return rbac.Ref{}, inputErrorf("%s %q: want NAMESPACE/NAME, e.g. kubeplug-system/kubeplug", flag, v)
	}
	return rbac.Ref{Namespace: ns, Name: n}, nil
}
