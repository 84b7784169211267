package app

import (
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/kubeplug/kubeplug/host/kube"
	"github.com/kubeplug/kubeplug/host/oci"
	"github.com/kubeplug/kubeplug/host/webhookcert"
)

// Options are what `kubeplug run` takes.
type Options struct {
	// ConfigPath is the host configuration file (host.yaml).
	ConfigPath string
	// Kubeconfig is a kubeconfig file; empty looks where kubectl and
	// controller-runtime look ($KUBECONFIG, the in-cluster configuration,
	// ~/.kube/config: kube.RESTConfig). Ignored when RESTConfig is set.
	Kubeconfig string
	// Context is the kubeconfig context to use; empty uses its
	// current-context.
	Context string
	// RESTConfig, when set, is used instead of Kubeconfig.
	RESTConfig *rest.Config
	// CacheDir keeps compiled modules between runs; empty keeps them in
	// memory.
	CacheDir string
	// ImageCacheDir keeps modules pulled from registries (image: entries),
	// named by digest, so that a pinned image loads without the registry;
	// empty keeps none.
	ImageCacheDir string
	// ImageTimeout bounds each pull of a module's image, all its requests
	// and transfers together; 0 takes oci.DefaultTimeout.
	ImageTimeout time.Duration
	// MetricsAddr is where /metrics, /healthz and /readyz are served;
	// empty or "0" serves nothing.
	MetricsAddr string
	// ProbeAddr is where /healthz and /readyz alone are served, for the
	// kubelet's probes; empty or "0" serves nothing. /healthz fails when
	// the leader election is stuck renewing the Lease, or the reload loop
	// has ended or is wedged in one reload (see probes.go); /readyz until
	// the modules are loaded, the caches synced and the webhook serving.
	ProbeAddr string
	// WebhookAddr, when set, serves the admit hooks of the modules as
	// admission webhooks at https://WebhookAddr/admit/<module>, on every
	// replica whatever the leader election, with the serving certificate
	// of WebhookCertDir (tls.crt, tls.key), reloaded when it changes.
	WebhookAddr, WebhookCertDir string
	// WebhookCert, when set, has the host make, keep and rotate the
	// webhook's certificate itself instead of reading WebhookCertDir.
	WebhookCert *WebhookCert
	// Profiles serves Go's runtime profiles under /debug/pprof/ on
	// MetricsAddr.
	Profiles bool
	// GuestCalls bounds the calls into guests that run at once, of all
	// modules together (runtime.Options.GuestCalls); zero means GOMAXPROCS.
	GuestCalls int
	// LeaderElection, when set, runs the controllers only while this host
	// holds the lease.
	LeaderElection *LeaderElection
	// Logger receives the host's log; nil discards it.
	Logger *slog.Logger
	// Reload, when set, reloads the host configuration and its modules on
	// every receive, as a changed file does: `kubeplug run` sends on SIGHUP.
	Reload <-chan struct{}
	// OnListen, when set, is told the metrics server's address once it
	// listens (useful with port 0).
	OnListen func(addr string)
}

// WebhookCert is where the host keeps the webhook certificate it manages
// (see host/webhookcert).
type WebhookCert struct {
	// SecretNamespace and SecretName name the kubernetes.io/tls Secret
	// the replicas share the CA and serving certificate in.
	SecretNamespace, SecretName string
	// ServiceNamespace and ServiceName name the webhook's Service: the
	// serving certificate is for its DNS names.
	ServiceNamespace, ServiceName string
	// ConfigName names the webhook configurations whose caBundle the
	// host keeps current (kubeplug webhook-config --name).
	ConfigName string
	// Lifetimes of the CA and the serving certificate; zero fields take
	// webhookcert.DefaultLifetimes.
	Lifetimes webhookcert.Lifetimes

	// owner, when set, owns the Secret (see installOwner).
	owner *kube.Owner
}

// LeaderElection configures the Lease that makes several hosts safe.
type LeaderElection struct {
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Identity names this host in the Lease; default $POD_NAME (else the
	// hostname) and a random suffix.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's
	// leader-election timings; zero takes 15s, 10s and 2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// watchDog, when set, is told of the elector so that /healthz fails
	// while this host leads without renewing the Lease.
	watchDog *leaderelection.HealthzAdaptor
	// owner, when set, owns the Lease (see installOwner).
	owner *kube.Owner
}

// callTimeout returns the bound of each API request a reconcile makes. Under
// leader election it is the lease duration minus the renew deadline: the
// leader stops starting writes at the latest when its renew deadline passes
// since it last renewed, so a write started before then ends before the
// Lease could expire and another host take it. Otherwise it is the
// reconcile's own bound.
func (o *Options) callTimeout(reconcile time.Duration) (time.Duration, error) {
	le := o.LeaderElection
	if le == nil {
		return reconcile, nil
	}
	lease, renew := le.leaseDuration(), le.renewDeadline()
	if renew >= lease {
		return 0, fmt.Errorf("%w: the leader election's renew deadline (%s) must be shorter than its lease duration (%s), "+
			"so that a write started before the leader gives up ends before the Lease expires; e.g. 15s and 10s", ErrConfig, renew, lease)
	}
	return min(lease-renew, reconcile), nil
}

// restConfig returns the configuration to reach the API server with.
func (o *Options) restConfig() (*rest.Config, error) {
	if o.RESTConfig != nil {
		return rest.CopyConfig(o.RESTConfig), nil
	}
	return kube.RESTConfig(o.Kubeconfig, o.Context)
}

// fetchOptions are the host's settings for reading module entries.
func (o *Options) fetchOptions() oci.FetchOptions {
	return oci.FetchOptions{CacheDir: o.ImageCacheDir, Timeout: o.ImageTimeout, Logger: o.Logger}
}
