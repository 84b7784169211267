package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubeplug/kubeplug/host/app"
)

func newRunCommand(opts *globalOptions, s streams) *cobra.Command {
	var (
		o  app.Options
		wc webhookCertFlags
		le struct {
			enabled                                   bool
			namespace, name, identity                 string
			leaseDuration, renewDeadline, retryPeriod time.Duration
		}
	)
	cmd := &cobra.Command{
		Use:   "run --config host.yaml [--kubeconfig FILE] [--context NAME]",
		Short: "Run the host against a cluster",
		Long: `Run watches StatefulSets, Pods, PersistentVolumeClaims, PersistentVolumes,
StorageClasses (and VolumeClaimUpdates where the CRD is installed), reconciles
each subject through the modules the host configuration names, and carries
out their actions. It finds the cluster as kubectl and controller-runtime do:
--kubeconfig, else the files $KUBECONFIG lists, else the in-cluster
configuration (a pod's service account), else ~/.kube/config; --context picks
a context other than the kubeconfig's current one.

The host watches the configuration file and every module file it names, and
reloads when one changes (debounced), or on SIGHUP: a changed module is
compiled and checked in the background and swapped in atomically (calls in
flight finish on the old one), an added entry starts its controller, a removed
one stops. A configuration or module that fails its checks changes nothing
that runs; the host says why in its log, in a Warning event on its Pod and in
kubeplug_module_swaps_total / kubeplug_config_reloads_total.

It serves Prometheus metrics on /metrics (--metrics-bind-address), and the
kubelet's probes on a port of their own (--health-probe-bind-address), also
answered on the metrics port: /readyz is ready once the modules are loaded,
the caches have synced and the webhook (if any) serves; /healthz fails when
this replica leads without having renewed its Lease for 20s past the renew
deadline, or when the reload loop has ended or one reload has run for more
than 10 minutes, so that the kubelet restarts a wedged host. With
--leader-elect only the holder of a Lease reconciles; the others keep their
caches warm and take over when it stops. SIGTERM or SIGINT lets the reconciles
in flight finish, releases the Lease and exits 0.

The configuration is checked, and every module loaded and checked against its
entry (subject, namespaces, allow:), before the host connects to the cluster.
Each reconcile is bounded by the configuration's reconcileTimeout; with
--leader-elect each API request is also bounded by the lease duration minus the
renew deadline, and losing the Lease cancels the reconciles in flight.

Exit status: 0 after a clean stop, 1 when the host fails or loses its Lease,
2 for a bad configuration or module (a module whose manifest asks for more than
its allow: list grants included).`,
		Example: `  kubeplug run --config host.yaml --context kind-dev
  kubeplug run --config /etc/kubeplug/host.yaml --leader-elect --log-format json \
      --metrics-bind-address :8080 --health-probe-bind-address :8081`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.ConfigPath == "" {
				return inputErrorf("--config is required: name the host configuration file (see host/config/README.md)")
			}
			// Info, as controllers log: a healthy host says that it
			// started, what it loaded, when it leads and when it swaps.
			log, err := opts.clientLogger(s.err, slog.LevelInfo)
			if err != nil {
				return err
			}
			o.Logger = log
			if o.CacheDir, err = opts.cacheDir.writableDir(); err != nil {
				return err
			}
			o.ImageCacheDir = opts.imageCacheDir.dir()
			o.ImageTimeout = opts.imageTimeout
			if le.enabled {
				o.LeaderElection = &app.LeaderElection{
					Namespace: le.namespace, Name: le.name, Identity: le.identity,
					LeaseDuration: le.leaseDuration, RenewDeadline: le.renewDeadline, RetryPeriod: le.retryPeriod,
				}
			}
			if o.WebhookCert, err = wc.options(); err != nil {
				return err
			}
			o.Reload = reloadSignals(cmd.Context())
			err = app.Run(cmd.Context(), o)
			switch {
			case err == nil:
				return nil
			case errors.Is(err, app.ErrConfig):
				return inputError(err)
			}
			return failure(err)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ConfigPath, "config", "", "host configuration file (required)")
	addClusterFlags(f, &o.Kubeconfig, &o.Context)
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "address for /metrics (and /healthz, /readyz); \"0\" or empty disables it")
	f.StringVar(&o.MetricsAddr, "metrics-addr", ":8080", "")
	_ = f.MarkDeprecated("metrics-addr", "use --metrics-bind-address")
	f.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address for /healthz and /readyz alone, for the kubelet's probes; \"0\" or empty disables it")
	f.StringVar(&o.WebhookAddr, "webhook-addr", "", "address to serve the modules' admit hooks on as admission webhooks (https://ADDR/admit/<module>); empty serves none")
	f.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "", "directory of the webhook's serving certificate, tls.crt and tls.key; reloaded when they change")
	wc.add(f)
	f.IntVar(&o.GuestCalls, "guest-calls", 0, "how many calls into modules run at once, of all modules together; the others wait their turn, admission hooks first (0: one per core, GOMAXPROCS)")
	f.BoolVar(&o.Profiles, "profiles", false, "also serve Go's runtime profiles at /debug/pprof/ on --metrics-bind-address")
	f.BoolVar(&le.enabled, "leader-elect", false, "reconcile only while holding the leader Lease, so that several replicas are safe")
	f.StringVar(&le.namespace, "leader-elect-namespace", defaultLeaseNamespace(), "namespace of the leader Lease (default: $POD_NAMESPACE, else kube-system)")
	f.StringVar(&le.name, "leader-elect-name", "kubeplug", "name of the leader Lease")
	f.StringVar(&le.identity, "leader-elect-identity", "", "this replica's name in the Lease (default: $POD_NAME, else the hostname, and a random suffix)")
	f.DurationVar(&le.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long followers wait before taking a Lease that was not renewed")
	f.DurationVar(&le.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leading")
	f.DurationVar(&le.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often to try to acquire or renew the Lease")
	return cmd
}

// reloadSignals returns a channel that receives on every SIGHUP until ctx
// ends: the host reloads its configuration and modules.
func reloadSignals(ctx context.Context) <-chan struct{} {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGHUP)
	out := make(chan struct{}, 1)
	go func() {
		defer signal.Stop(sig)
		for {
			select {
			case <-ctx.Done():
				return
			case <-sig:
				select {
				case out <- struct{}{}:
				default: // a reload is already due
				}
			}
		}
	}()
	return out
}

// addClusterFlags adds kubectl's flags that say which cluster to talk to.
func addClusterFlags(f *pflag.FlagSet, kubeconfig, context *string) {
	f.StringVar(kubeconfig, "kubeconfig", "", "kubeconfig file (default: the files $KUBECONFIG lists, else the in-cluster configuration, else ~/.kube/config)")
	f.StringVar(context, "context", "", "the kubeconfig context to use (default: its current-context)")
}

func defaultLeaseNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return "kube-system"
}
