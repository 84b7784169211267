package app

import (
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options are what `kubeplug run` takes.
type Options struct {
	// ConfigPath is the host configuration file (host.yaml).
	ConfigPath string
	// Kubeconfig is a kubeconfig file; empty uses the in-cluster
	// configuration (the pod's service account). Ignored when RESTConfig
	// is set.
	Kubeconfig string
	// RESTConfig, when set, is used instead of Kubeconfig.
	RESTConfig *rest.Config
	// CacheDir keeps compiled modules between runs; empty keeps them in
	// memory.
	CacheDir string
	// MetricsAddr is where /metrics, /healthz and /readyz are served;
	// empty serves nothing.
	MetricsAddr string
	// LeaderElection, when set, runs the controllers only while this host
	// holds the lease.
	LeaderElection *LeaderElection
	// Logger receives the host's log; nil discards it.
	Logger *slog.Logger
	// OnListen, when set, is told the metrics server's address once it
	// listens (useful with port 0).
	OnListen func(addr string)
}

// LeaderElection configures the Lease that makes several hosts safe.
type LeaderElection struct {
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Identity names this host in the Lease; default hostname_random.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's
	// leader-election timings; zero takes 15s, 10s and 2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// restConfig returns the configuration to reach the API server with.
func (o *Options) restConfig() (*rest.Config, error) {
	if o.RESTConfig != nil {
		return rest.CopyConfig(o.RESTConfig), nil
	}
	// An empty kubeconfig path falls back to the in-cluster configuration.
	c, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		if o.Kubeconfig == "" {
			return nil, fmt.Errorf("no --kubeconfig given and not running in a cluster: %w", err)
		}
		return nil, fmt.Errorf("kubeconfig %s: %w", o.Kubeconfig, err)
	}
	return c, nil
}
