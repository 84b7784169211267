package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubeplug/kubeplug/host/app"
	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/oci"
	"github.com/kubeplug/kubeplug/host/rbac"
)

// rbacOptions are `kubeplug rbac`'s flags.
type rbacOptions struct {
	configPath, modulesDir, serviceAccount, output, name string
	podNamespace, leaseNamespace, leaseName              string
	leaderElect                                          bool
	certSecret, webhookConfigName                        string
}

func newRBACCommand(opts *globalOptions, s streams) *cobra.Command {
	var o rbacOptions
	cmd := &cobra.Command{
		Use:   "rbac --config host.yaml [--modules-dir DIR] [--service-account NS/NAME] [-o yaml|helm]",
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
    configurations with --webhook-cert-secret; with either of these, the
    reads of its own Pod and ReplicaSet that find the Deployment the Lease
    and the Secret belong to (deleted with it).

Modules in shadow mode get reads only: the host writes nothing for them.
-o yaml (the default) prints a ClusterRole, Roles and their bindings to the
ServiceAccount for kubectl apply; -o helm prints the rules as the values
rbac.rules (the ClusterRole's) and rbac.namespacedRules (NAMESPACE: rules) of
charts/kubeplug. Run it again when the configuration or a module's manifest
changes: a module swapped in with more capabilities gets Forbidden errors
until the rules grow.

A configuration written for the kubeplug image names its modules under
/modules/; --modules-dir reads them from a directory of built modules instead
(make guests writes build/guests), so that the shipped host.yaml files can be
read where kubeplug was built.`,
		Example: `  kubeplug rbac --config host.yaml | kubectl apply -f -
  kubeplug rbac --config host.yaml --leader-elect -o helm > rbac-values.yaml
  kubeplug rbac --config deploy/base/host.yaml --modules-dir build/guests --leader-elect`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := printRBAC(cmd.Context(), opts, s, o)
			if err != nil {
				return err
			}
			_, err = s.out.Write(out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", "", "host configuration file (required)")
	f.StringVar(&o.modulesDir, "modules-dir", "", "read the modules the configuration names under /modules/ (the image's) from this directory, e.g. build/guests")
	f.StringVar(&o.serviceAccount, "service-account", "kubeplug-system/kubeplug", "the host's ServiceAccount, NAMESPACE/NAME, that the roles are bound to")
	f.StringVarP(&o.output, "output", "o", "yaml", "yaml (RBAC objects for kubectl apply) or helm (values for charts/kubeplug)")
	f.StringVar(&o.name, "name", "kubeplug", "name of the ClusterRole, the Roles and their bindings")
	f.StringVar(&o.podNamespace, "pod-namespace", "", "namespace of the host's Pod, where its own events go (default: the ServiceAccount's)")
	f.BoolVar(&o.leaderElect, "leader-elect", false, "the host runs with --leader-elect: add its Lease")
	f.StringVar(&o.leaseNamespace, "leader-elect-namespace", "", "namespace of the leader Lease (default: --pod-namespace)")
	f.StringVar(&o.leaseName, "leader-elect-name", "kubeplug", "name of the leader Lease")
	f.StringVar(&o.certSecret, "webhook-cert-secret", "", "the host runs with --webhook-cert-secret NAMESPACE/NAME: add that Secret and the webhook configurations")
	f.StringVar(&o.webhookConfigName, "webhook-config-name", "kubeplug", "name of the webhook configurations whose caBundle the host patches (kubeplug webhook-config --name)")
	return cmd
}

// printRBAC derives the rules o's configuration needs and returns them as
// o.output says.
func printRBAC(ctx context.Context, opts *globalOptions, s streams, o rbacOptions) ([]byte, error) {
	if o.configPath == "" {
		return nil, inputErrorf("--config is required: the host configuration whose modules to derive RBAC for")
	}
	if o.output != "yaml" && o.output != "helm" {
		return nil, inputErrorf("-o %q: want yaml or helm", o.output)
	}
	sa, err := parseRef("--service-account", o.serviceAccount)
	if err != nil {
		return nil, err
	}
	if errs := validation.IsDNS1123Subdomain(o.name); len(errs) > 0 {
		return nil, inputErrorf("--name %q: %s", o.name, strings.Join(errs, "; "))
	}
	h := rbac.Host{PodNamespace: o.podNamespace}
	if h.PodNamespace == "" {
		h.PodNamespace = sa.Namespace
	}
	if o.leaderElect {
		h.Lease = &rbac.Ref{Namespace: o.leaseNamespace, Name: o.leaseName}
		if h.Lease.Namespace == "" {
			h.Lease.Namespace = h.PodNamespace
		}
	}
	if o.certSecret != "" {
		ref, err := parseRef("--webhook-cert-secret", o.certSecret)
		if err != nil {
			return nil, err
		}
		h.WebhookCertSecret = &ref
		h.WebhookConfigs = rbac.WebhookConfigs{Mutating: o.webhookConfigName, Validating: o.webhookConfigName}
	}
	file, err := config.LoadWith(o.configPath, config.Options{ModulesDir: o.modulesDir})
	if err != nil {
		return nil, inputError(err)
	}
	h.CSIDrivers = len(file.CSIDrivers) > 0
	h.ShardNamespace = file.Shard.Namespace
	for i := range file.Modules {
		m, err := rbacModule(ctx, opts, s, file, &file.Modules[i])
		if err != nil {
			return nil, err
		}
		h.Modules = append(h.Modules, m)
	}
	rules, err := rbac.Derive(h)
	if err != nil {
		return nil, inputError(err)
	}
	var out []byte
	if o.output == "helm" {
		out, err = rbac.HelmValues(rules)
	} else {
		out, err = rbac.YAML(rules, o.name, sa)
	}
	if err != nil {
		return nil, failure(err)
	}
	return out, nil
}

// rbacModule is what rbac.Derive needs of entry.
func rbacModule(ctx context.Context, opts *globalOptions, s streams, file *config.File, entry *config.Module) (rbac.Module, error) {
	var m rbac.Module
	err := withEntry(ctx, opts, s, file, entry, func(l *loadedModule, mod controller.Module) error {
		man := l.module.Manifest()
		m = rbac.Module{
			Name: entry.Name, Subject: man.Subject, Watches: man.Watches, Hooks: slices.Clone(man.Hooks),
			Namespaces: entry.Namespaces, Granted: mod.Allowed, Shadow: mod.Shadow,
		}
		return nil
	})
	return m, err
}

// withEntry calls use with the module the host would run for entry: read
// or pulled as the host reads it, loaded with the entry's limits, and
// checked against the entry as the host checks it (app.EntryModule). The
// module is closed when use returns.
func withEntry(ctx context.Context, opts *globalOptions, s streams, file *config.File, entry *config.Module,
	use func(l *loadedModule, mod controller.Module) error) error {
	src, err := oci.Fetch(ctx, entry, opts.fetchOptions())
	if err != nil {
		return inputError(err)
	}
	l, err := loadInput(ctx, opts, s, src.Name, src.Wasm, entry.Limits)
	if err != nil {
		return err
	}
	defer l.close(ctx)
	mod, err := app.EntryModule(entry, l.module)
	if err != nil {
		return inputError(fmt.Errorf("%s: %w", file.Path, err))
	}
	return use(l, mod)
}

// parseRef reads a NAMESPACE/NAME flag.
func parseRef(flag, v string) (rbac.Ref, error) {
	ns, n, ok := strings.Cut(v, "/")
	if !ok || strings.Contains(n, "/") || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(n)) > 0 {
		return rbac.Ref{}, inputErrorf("%s %q: want NAMESPACE/NAME, e.g. kubeplug-system/kubeplug", flag, v)
	}
	return rbac.Ref{Namespace: ns, Name: n}, nil
}
