package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/metrics"
	"github.com/kubeplug/kubeplug/host/snapshot"
	"github.com/kubeplug/kubeplug/host/webhookcert"
)

// reconciles reports whether mod has a reconcile hook, and so a controller.
func reconciles(mod controller.Module) bool {
	return slices.Contains(mod.Runtime.Manifest().Hooks, abi.HookReconcile)
}

// admitters returns the modules of mods with an admit hook, with their
// entries' webhook settings. A module in shadow mode is not served: its
// entry may have no allow: list, and an admission answer cannot be recorded
// without taking effect.
func admitters(file *config.File, mods []controller.Module) []*admission.Module {
	var out []*admission.Module
	for _, mod := range mods {
		// Every runtime profile's module is an Admitter; the manifest says
		// whether it admits.
		admitter, ok := mod.Runtime.(admission.Admitter)
		if mod.Shadow || !ok || !slices.Contains(mod.Runtime.Manifest().Hooks, abi.HookAdmit) {
			continue
		}
		am := &admission.Module{Name: mod.Name, Admitter: admitter, Granted: mod.Allowed, Config: mod.Config}
		for i := range file.Modules {
			if c := &file.Modules[i]; c.Name == mod.Name {
				am.FailurePolicy, am.Timeout = c.FailurePolicy, c.WebhookTimeout
			}
		}
		out = append(out, am)
	}
	return out
}

// startWebhook serves the admit hooks of mods on opts.WebhookAddr until ctx
// is done, with a namespace informer of its own for the namespaces' labels.
// It listens at once, and the host calls it before its caches have synced
// when the certificate comes from files: a review that comes in earlier
// waits, within its own deadline, until synced is closed
// and the namespaces have synced too (admission.Reviewer.Synced), rather
// than have kube-apiserver's call refused and the failure policy answer
// for every object created while a host starts. It returns a function
// that stops it, and a channel closed once reviews are answered; nothing
// runs when no address is set, and the channel is closed.
func startWebhook(ctx context.Context, opts Options, file *config.File, rl *Reloader, lister snapshot.Lister, synced <-chan struct{},
	client kubernetes.Interface, m *metrics.Metrics, log *slog.Logger) (stop func(), serving <-chan struct{}, err error) {
	ready := make(chan struct{})
	if opts.WebhookAddr == "" {
		close(ready)
		return func() {}, ready, nil
	}
	certs, err := webhookCerts(ctx, opts, client, log)
	if err != nil {
		return nil, nil, err
	}
	factory := informers.NewSharedInformerFactory(client, file.Resync)
	namespaces := factory.Core().V1().Namespaces()
	nsInformer := namespaces.Informer()
	r := &admission.Reviewer{
		Lister:          lister,
		Synced:          ready,
		LiveStatefulSet: liveStatefulSet(client, file.Shard),
		NamespaceLabels: func(name string) (map[string]string, error) {
			ns, err := namespaces.Lister().Get(name)
			if err != nil {
				return nil, nil // unknown yet: the module sees no labels
			}
			return ns.Labels, nil
		},
		Observe: func(module string, o *admission.Outcome, took time.Duration) {
			m.HookCalls.WithLabelValues(module, abi.HookAdmit, o.Result()).Inc()
			m.HookSeconds.WithLabelValues(module, abi.HookAdmit).Observe(took.Seconds())
			if reason := o.FailureReason(); reason != "" {
				m.HookErrors.WithLabelValues(module, abi.HookAdmit, reason).Inc()
			}
		},
		Logger: log,
	}
	// The reloader hands the handler the modules of every reload from now
	// on (Reloader.publish).
	rl.mu.Lock()
	mods := make([]controller.Module, 0, len(rl.applied))
	for _, e := range rl.applied {
		mods = append(mods, e.mod)
	}
	h := admission.NewHandler(r, admitters(file, mods))
	rl.webhook = h
	rl.mu.Unlock()
	srv, err := admission.ListenTLS(opts.WebhookAddr, certs, h, log, admission.DefaultServerLimits())
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	stopCh := make(chan struct{})
	factory.Start(stopCh)
	go func() {
		if err := srv.Serve(); err != nil {
			log.Error("webhook server", "err", err)
		}
	}()
	log.Info("listening for admission reviews; each waits until the caches have synced", "addr", srv.Addr())
	go func() {
		select {
		case <-synced:
		case <-ctx.Done():
			return
		}
		if !cache.WaitForCacheSync(ctx.Done(), nsInformer.HasSynced) {
			return
		}
		close(ready)
		log.Info("serving admission webhooks", "addr", srv.Addr(), "modules", len(admitters(file, mods)))
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		close(stopCh)
		factory.Shutdown()
	}, ready, nil
}

// webhookCerts returns where the webhook server's certificate comes from:
// the Secret the host manages (its first sync done, so that the server
// starts with a certificate), or the files of --webhook-cert-dir.
func webhookCerts(ctx context.Context, opts Options, client kubernetes.Interface, log *slog.Logger) (admission.CertSource, error) {
	wc := opts.WebhookCert
	switch {
	case wc != nil && opts.WebhookCertDir != "":
		return nil, fmt.Errorf("%w: give --webhook-cert-dir or --webhook-cert-secret, not both", ErrConfig)
	case wc != nil:
		l := webhookcert.DefaultLifetimes()
		if wc.Lifetimes.CA != 0 {
			l.CA = wc.Lifetimes.CA
		}
		if wc.Lifetimes.Serving != 0 {
			l.Serving = wc.Lifetimes.Serving
		}
		if wc.Lifetimes.Propagation != 0 {
			l.Propagation = wc.Lifetimes.Propagation
		}
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		m := &webhookcert.Manager{
			Client: client, Namespace: wc.SecretNamespace, Name: wc.SecretName, WebhookConfig: wc.ConfigName, Log: log,
			Issuer: &webhookcert.Issuer{DNSNames: webhookcert.ServiceDNSNames(wc.ServiceNamespace, wc.ServiceName), Lifetimes: l},
		}
		if o := wc.owner; o != nil && o.Namespace == wc.SecretNamespace {
			m.Owner = &o.Ref
		}
		if err := m.Start(ctx); err != nil {
			return nil, err
		}
		return m, nil
	case opts.WebhookCertDir != "":
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		c, err := admission.NewCertWatcher(opts.WebhookCertDir, log)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("%w: --webhook-addr needs --webhook-cert-dir, a directory holding tls.crt and tls.key, "+
		"or --webhook-cert-secret and --webhook-service for a certificate the host makes and rotates itself", ErrConfig)
}

// liveStatefulSet reads a StatefulSet from the API server for an admission
// review whose set the cache has not got yet, as the cache would hold it:
// NotFound for a set outside the host's shard.
func liveStatefulSet(client kubernetes.Interface, shard config.Shard) func(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error) {
	return func(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error) {
		notFound := apierrors.NewNotFound(appsv1.Resource("statefulsets"), name)
		if shard.Namespace != "" && namespace != shard.Namespace {
			return nil, notFound
		}
		s, err := client.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if sel := shard.LabelSelector; sel != nil && !sel.Matches(labels.Set(s.Labels)) {
			return nil, notFound
		}
		return s, nil
	}
}
