// Package controlplane starts a real Kubernetes control plane inside the
// calling process: embedded etcd, kube-apiserver and, when asked for, a
// kube-controller-manager running only the named controllers.
//
// Tests and `make demo` share it. It lives in its own Go module so that
// k8s.io/kubernetes never enters the module graph of guest authors or of the
// kubeplug binary.
//
// One control plane per process: kube-apiserver and kube-controller-manager
// register global state (metrics, feature gates, configz) that a second
// instance running beside the first in the same process would fight over.
// One kube-apiserver after another is fine: RestartAPIServer stops the
// running one before it starts the next.
package controlplane

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kubeplug/kubeplug/e2e/internal/portlease"
	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	kubeapiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	kcm "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

// Options says what to start.
type Options struct {
	// Controllers are the kube-controller-manager controllers to run, by
	// their --controllers names (garbage-collector-controller,
	// statefulset-controller, persistentvolume-binder-controller,
	// persistentvolumeclaim-protection-controller,
	// persistentvolume-protection-controller, ...; the old short names
	// such as garbagecollector are aliases). Empty: no controller manager.
	Controllers []string
	// Logf receives the control plane's progress lines. Nil: discarded.
	Logf func(format string, args ...any)
	// ComponentLogs keeps the components' own (klog) logs on standard
	// error; by default they are discarded.
	ComponentLogs bool
	// ServiceResolver, when set, tells kube-apiserver where a Service is
	// (namespace, name, port -> https://HOST:PORT) when it calls a webhook
	// registered by service: no kube-proxy or cluster DNS runs here. The
	// API server still verifies the webhook's certificate for the
	// Service's name, NAME.NAMESPACE.svc. It is kube-apiserver's hook for
	// tests, process-wide: one control plane per process may set it.
	ServiceResolver func(namespace, name string, port int32) (*url.URL, error)
}

// serviceResolver adapts a func to kube-apiserver's webhook.ServiceResolver.
type serviceResolver func(namespace, name string, port int32) (*url.URL, error)

func (f serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return f(namespace, name, port)
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	// Config reaches kube-apiserver with full rights, through a proxy
	// whose address outlives RestartAPIServer, as a member of
	// system:masters by a static token, trusting ServingCA.
	Config *rest.Config
	// Kubeconfig is a kubeconfig file for Config, for programs started
	// as separate processes (kubeplug run, kubectl).
	Kubeconfig string
	// ServingCA is kube-apiserver's serving certificate and the CA that
	// signed it, PEM-encoded: what a pod finds in its service account's
	// ca.crt. The certificate is valid for 127.0.0.1, where Config.Host
	// points, and for kubernetes.default.svc; every kube-apiserver this
	// control plane starts serves it.
	ServingCA []byte
	// Dir holds etcd's data, the kubeconfig and the servers' certificates;
	// it is removed by Stop.
	Dir string
	// EtcdURL is etcd's client address, for a test that must read what the
	// API does not show (the revision an object was created at); it
	// outlives RestartAPIServer. kube-apiserver keeps its objects under
	// etcd's default prefix, /registry.
	EtcdURL string

	stopOnce sync.Once
	stops    []func()

	apiMu sync.Mutex // RestartAPIServer and Stop, one at a time
	api   *apiServer
}

// Stop stops everything Start started, newest first, and removes Dir.
func (cp *ControlPlane) Stop() {
	cp.stopOnce.Do(func() {
		for i := len(cp.stops) - 1; i >= 0; i-- {
			cp.stops[i]()
		}
		os.RemoveAll(cp.Dir)
	})
}

// Start starts etcd, kube-apiserver and the controllers opts names, and
// returns once the API server answers and its default namespace exists.
// Cancelling ctx does not stop the control plane: call Stop.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := stampVersion(); err != nil {
		return nil, err
	}
	if !opts.ComponentLogs {
		quietComponents()
	}
	dir, err := os.MkdirTemp("", "kubeplug-controlplane-")
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	started := &ControlPlane{Dir: dir}
	defer func() {
		if err != nil {
			started.Stop()
		}
	}()
	cp = started

	etcdURL, stopEtcd, err := startEtcd(filepath.Join(dir, "etcd"), opts.ComponentLogs)
	if err != nil {
		return nil, err
	}
	cp.stops = append(cp.stops, stopEtcd)
	cp.EtcdURL = etcdURL
	logf("etcd serving at %s", etcdURL)

	if opts.ServiceResolver != nil {
		cp.stops = append(cp.stops, kubeapiserver.SetServiceResolverForTests(serviceResolver(opts.ServiceResolver)))
	}
	cp.stops = append(cp.stops, cp.stopAPIServer)
	if err := cp.startAPIServer(etcdURL, logf); err != nil {
		return nil, err
	}
	logf("kube-apiserver serving at %s", cp.Config.Host)

	cp.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(cp.Kubeconfig, cp.Config); err != nil {
		return nil, err
	}

	if len(opts.Controllers) > 0 {
		stop, err := startControllerManager(ctx, cp.Kubeconfig, opts.Controllers)
		if err != nil {
			return nil, err
		}
		cp.stops = append(cp.stops, stop)
		logf("kube-controller-manager running %s", strings.Join(opts.Controllers, ","))
	}
	return cp, nil
}

// Client returns a clientset for cp.Config.
func (cp *ControlPlane) Client() kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(cp.Config)
}

// quietComponents discards klog's output, which kube-apiserver and
// kube-controller-manager write in volume.
func quietComponents() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

func startEtcd(dir string, verbose bool) (clientURL string, stop func(), err error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	// At "error" etcd reports its own orderly shutdown as errors.
	cfg.LogLevel = "fatal"
	if verbose {
		cfg.LogLevel = "info"
	}
	cfg.Logger = "zap"
	// unix sockets: no port to race for.
	peer, err := url.Parse("unix://" + filepath.Join(os.TempDir(), fmt.Sprintf("kubeplug-etcd-peer-%d-%d", os.Getpid(), time.Now().UnixNano())))
	if err != nil {
		return "", nil, err
	}
	client, err := freeLocalURL()
	if err != nil {
		return "", nil, err
	}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("controlplane: etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return "", nil, errors.New("controlplane: etcd did not become ready within 60s")
	}
	return client.String(), func() { e.Close(); os.Remove(peer.Path) }, nil
}

func freeLocalURL() (*url.URL, error) {
	addr, err := portlease.Addr()
	if err != nil {
		return nil, fmt.Errorf("controlplane: free port: %w", err)
	}
	return &url.URL{Scheme: "http", Host: addr}, nil
}

// startControllerManager runs kube-controller-manager the way its own test
// server does, without needing a *testing.T.
func startControllerManager(ctx context.Context, kubeconfig string, controllers []string) (func(), error) {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, fmt.Errorf("controlplane: kube-controller-manager options: %w", err)
	}
	all, disabled, aliases := kcm.KnownControllers(), kcm.ControllersDisabledByDefault(), kcm.ControllerAliases()
	named := s.Flags(all, disabled, aliases)
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		// Short sync periods keep the garbage collector and the binder
		// prompt on a test's time scale.
		"--pvclaimbinder-sync-period=1s",
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("controlplane: kube-controller-manager flags: %w", err)
	}
	s.ParsedFlags = &named
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, fmt.Errorf("controlplane: kube-controller-manager feature gates: %w", err)
	}
	config, err := s.Config(ctx, all, disabled, aliases)
	if err != nil {
		return nil, fmt.Errorf("controlplane: kube-controller-manager config: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- kcm.Run(runCtx, config.Complete()) }()

	// Ready when its informers have written something we can see: wait for
	// the API server to have served a list from this client, i.e. give Run
	// a moment to fail fast on bad configuration.
	select {
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("controlplane: kube-controller-manager exited: %w", err)
	case <-time.After(500 * time.Millisecond):
	}
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}, nil
}

func writeKubeconfig(path string, c *rest.Config) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["controlplane"] = &clientcmdapi.Cluster{
		Server:                   c.Host,
		CertificateAuthorityData: c.TLSClientConfig.CAData,
		TLSServerName:            c.TLSClientConfig.ServerName,
		InsecureSkipTLSVerify:    c.TLSClientConfig.Insecure,
	}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		Token:                 c.BearerToken,
		ClientCertificateData: c.TLSClientConfig.CertData,
		ClientKeyData:         c.TLSClientConfig.KeyData,
	}
	cfg.Contexts["controlplane"] = &clientcmdapi.Context{Cluster: "controlplane", AuthInfo: "admin"}
	cfg.CurrentContext = "controlplane"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("controlplane: write kubeconfig: %w", err)
	}
	return nil
}

// WaitFor polls cond every 100ms until it returns true, returns an error or
// timeout passes.
func WaitFor(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, cond)
}
