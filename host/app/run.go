package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/csi"
	"github.com/kubeplug/kubeplug/host/kube"
	"github.com/kubeplug/kubeplug/host/metrics"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// ErrLostLease is returned by Run when another host took the leader lease
// while this one led: the process should exit and be restarted.
var ErrLostLease = errors.New("lost the leader lease")

// ErrConfig wraps every error of a bad host configuration or module: the
// host refuses to start, and says what to fix.
var ErrConfig = errors.New("bad configuration")

// Run runs the host until ctx is done, then lets the reconciles in flight
// finish, releases the leader lease and returns nil. A bad configuration or
// module, or an API server that cannot be reached, fails before anything
// runs.
func Run(ctx context.Context, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	file, err := config.Load(opts.ConfigPath)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	callTimeout, err := opts.callTimeout(file.ReconcileTimeout)
	if err != nil {
		return err
	}
	m := metrics.New()
	ready := metrics.NewReadiness("loading modules")

	// The health endpoints come up first, so that a slow start shows as
	// "not ready" rather than as a connection refused.
	var srv *metrics.Server
	if opts.MetricsAddr != "" {
		srv, err = metrics.Listen(opts.MetricsAddr, m, ready)
		if err != nil {
			return err
		}
		if opts.Profiles {
			srv.ServeProfiles()
		}
		go func() {
			if err := srv.Serve(); err != nil {
				log.Error("metrics server", "err", err)
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		if opts.OnListen != nil {
			opts.OnListen(srv.Addr())
		}
		log.Info("serving metrics and health", "addr", srv.Addr())
	}

	engine, err := runtime.NewEngine(ctx, runtime.Options{CacheDir: opts.CacheDir, Logger: log})
	if err != nil {
		return err
	}
	defer engine.Close(context.WithoutCancel(ctx))
	mods, err := loadModules(ctx, engine, file, m, log)
	if err != nil {
		return err
	}

	rc, err := opts.restConfig()
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = float32(file.APIQPS), 2*file.APIQPS
	rc.UserAgent = "kubeplug"
	kube.CountRequests(rc, m.ObserveRequest)
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("api client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("api client: %w", err)
	}
	// Reconciles write through a client whose every request is bounded
	// (client-go sends the bound to the API server as well): the watches
	// of the informers must not be.
	wrc := rest.CopyConfig(rc)
	wrc.Timeout = callTimeout
	writes, err := dynamic.NewForConfig(wrc)
	if err != nil {
		return fmt.Errorf("api client: %w", err)
	}

	ready.NotReady("caches syncing")
	cache, err := kube.NewCache(client, dyn, cacheOptions(file))
	if err != nil {
		return err
	}
	events := kube.NewEventSink(context.WithoutCancel(ctx), client, 0)
	defer events.Shutdown()
	deps := controller.Deps{
		Lister:  cache,
		Cluster: &kube.Cluster{Dynamic: writes, Events: events},
		Metrics: m,
		Logger:  log,

		ReconcileTimeout: file.ReconcileTimeout,
	}
	if len(file.CSIDrivers) > 0 {
		volumes, err := csi.New(file.CSIDrivers, kube.SecretGetter(client), log)
		if err != nil {
			return fmt.Errorf("%w: %s: csiDrivers: %w", ErrConfig, file.Path, err)
		}
		defer volumes.Close()
		deps.Volumes, deps.Drivers = volumes, volumes.Drivers
	}
	ctrls := make([]*controller.Controller, 0, len(mods))
	for _, mod := range mods {
		ctrls = append(ctrls, controller.New(mod, deps))
	}
	if err := controller.Wire(cache, ctrls, log); err != nil {
		return err
	}

	informerCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { stopInformers(); cache.Shutdown() }()
	cache.Start(informerCtx)
	if !cache.WaitForSync(ctx) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("informer caches did not sync")
	}
	ready.Ready()
	log.Info("caches synced; host ready", "modules", len(ctrls))

	// run runs the controllers until ctx ends (they drain), or at once
	// when writes ends (the leadership is lost).
	run := func(ctx, writes context.Context) {
		m.Leader.Set(1)
		defer m.Leader.Set(0)
		var wg sync.WaitGroup
		for _, c := range ctrls {
			wg.Go(func() { c.RunWhile(ctx, writes) })
		}
		wg.Wait()
	}
	if opts.LeaderElection == nil {
		run(ctx, context.WithoutCancel(ctx))
		log.Info("stopped: reconciles in flight finished")
		return nil
	}
	return lead(ctx, client, *opts.LeaderElection, run, log)
}

// cacheOptions says what the host's cache watches: its shard of the
// cluster, if the configuration gives one.
func cacheOptions(file *config.File) kube.Options {
	o := kube.Options{Namespace: file.Shard.Namespace, Resync: file.Resync}
	if sel := file.Shard.LabelSelector; sel != nil && !sel.Empty() {
		o.LabelSelector = sel.String()
	}
	return o
}

// loadModules loads every module of file into engine and checks it against
// its entry.
func loadModules(ctx context.Context, engine *runtime.Engine, file *config.File, m *metrics.Metrics, log *slog.Logger) ([]controller.Module, error) {
	var mods []controller.Module
	for i := range file.Modules {
		c := &file.Modules[i]
		wasm, err := c.Read()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, file.Path, err)
		}
		rm, err := engine.Load(ctx, c.Path, wasm, c.Limits)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: module %s: %w", ErrConfig, file.Path, c.Name, err)
		}
		rm.SetName(c.Name)
		man := rm.Manifest()
		allowed, err := c.Accept(man)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, file.Path, err)
		}
		sum := sha256.Sum256(wasm)
		// The version is the module's to choose: as a label it must be
		// valid UTF-8, or client_golang panics.
		m.ModuleInfo.WithLabelValues(c.Name, metrics.Label(man.Version), man.Subject, string(c.Mode), hex.EncodeToString(sum[:])).Set(1)
		log.Info("loaded module", "module", c.Name, "path", c.Path, "version", man.Version, "subject", man.Subject, "mode", c.Mode)
		mods = append(mods, controller.Module{
			Runtime:    rm,
			Name:       c.Name,
			Namespaces: c.Namespaces,
			Selector:   c.LabelSelector,
			Config:     c.Config,
			Shadow:     c.Mode == config.ModeShadow,
			Workers:    c.Workers,
			Allowed:    allowed,
		})
	}
	return mods, nil
}
