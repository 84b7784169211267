package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/csi"
	"github.com/kubeplug/kubeplug/host/kube"
	"github.com/kubeplug/kubeplug/host/metrics"
	"github.com/kubeplug/kubeplug/host/oci"
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
	m.WatchReadiness(ready)
	health := &metrics.Health{}

	// The health endpoints come up first, so that a slow start shows as
	// "not ready" rather than as a connection refused.
	var srv *metrics.Server
	if !disabled(opts.MetricsAddr) {
		srv, err = metrics.Listen(opts.MetricsAddr, m, health, ready)
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
	stopProbes, err := serveProbes(ctx, opts.ProbeAddr, health, ready, log)
	if err != nil {
		return err
	}
	defer stopProbes()

	if opts.GuestCalls < 0 {
		return fmt.Errorf("--guest-calls %d: must be 0 (one per core, GOMAXPROCS) or more", opts.GuestCalls)
	}
	engine, err := runtime.NewEngine(ctx, runtime.Options{CacheDir: opts.CacheDir, Logger: log, GuestCalls: opts.GuestCalls})
	if err != nil {
		return err
	}
	defer engine.Close(context.WithoutCancel(ctx))
	rl := &Reloader{path: file.Path, engine: engine, m: m, log: log, host: hostObject(), ctx: ctx,
		fetch: opts.fetchOptions(), applied: map[string]*appliedEntry{}}
	health.Add("reload", healthCheck(func(now time.Time) error { return rl.health.check(now, ReloadWedgedAfter) }))
	// Image pulls under way end with ctx; their modules are not loaded
	// into an engine that is closing.
	defer rl.stopPulls()
	// A tag that moves to a new digest is a reload: the entry's bytes
	// changed, and the new module is swapped in as a changed file's is.
	rl.images = oci.NewWatcher(ctx, opts.fetchOptions(), func(name string) {
		go rl.Reload("the image tag of module " + name + " moved to a new digest")
	}, log)
	mods, err := rl.loadAll(file)
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
	owner := installOwner(ctx, opts, client, callTimeout, log)
	if wc := opts.WebhookCert; wc != nil {
		c := *wc
		c.owner = owner
		opts.WebhookCert = &c
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
	warnUnservedClaimUpdates(log, cache, mods)
	events := kube.NewEventSink(context.WithoutCancel(ctx), client, 0)
	defer events.Shutdown()
	m.WatchEventsPending(events.Pending)
	m.WatchGuestCalls(func() []metrics.GuestCallClass {
		var out []metrics.GuestCallClass
		for _, c := range engine.GuestCalls().Classes {
			out = append(out, metrics.GuestCallClass{Class: c.Class, Running: c.Running, Waiting: c.Waiting, WaitedSeconds: c.Waited.Seconds(), GaveUp: c.GaveUp})
		}
		return out
	})
	deps := controller.Deps{
		Lister:     cache,
		Cluster:    &kube.Cluster{Dynamic: writes, Events: events},
		Metrics:    m,
		WorkQueues: m.WorkQueues(),
		Logger:     log,

		ReconcileTimeout: file.ReconcileTimeout,
	}
	var volumes *csi.Client
	if len(file.CSIDrivers) > 0 {
		volumes, err = csi.New(file.CSIDrivers, kube.SecretGetter(client), log)
		if err != nil {
			return fmt.Errorf("%w: %s: csiDrivers: %w", ErrConfig, file.Path, err)
		}
		defer volumes.Close()
		deps.Volumes, deps.Drivers = volumes, volumes.Drivers
	}
	rl.deps, rl.fleet = deps, newFleet(cache, log)
	if volumes != nil {
		// Before the caches sync: a driver that does not answer shows
		// from the start, and stops being probed before it is closed.
		defer probeDrivers(ctx, volumes, ready, m, rl, log)()
	}
	if err := rl.start(file, mods); err != nil {
		return err
	}

	// The webhook listens before the caches sync and holds its reviews
	// until they have (startWebhook), when its certificate comes from
	// files. One made from a Secret needs the API server, which answers
	// once the caches have synced: that webhook starts then.
	synced := make(chan struct{})
	var serving <-chan struct{}
	stopWebhook := func() {}
	defer func() { stopWebhook() }()
	startHooks := func() (err error) {
		stopWebhook, serving, err = startWebhook(ctx, opts, file, rl, cache, synced, client, m, log)
		if err != nil {
			stopWebhook = func() {}
		}
		return err
	}
	early := opts.WebhookCert == nil
	if early {
		if err := startHooks(); err != nil {
			return err
		}
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
	close(synced)
	if !early {
		if err := startHooks(); err != nil {
			return err
		}
	}
	select {
	case <-serving:
	case <-ctx.Done():
		return nil
	}
	ready.Ready()
	log.Info("caches synced; host ready", "modules", rl.fleet.len())
	// Reloads change the fleet whether or not this host leads, so that a
	// follower takes over with the modules of the current configuration.
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		if err := rl.watch(watchCtx, opts.Reload); err != nil {
			log.Error("cannot watch for changes: the host reloads on nothing", "err", err)
		}
	}()
	defer func() { stopWatch(); <-watchDone }()

	// run runs the controllers until ctx ends (they drain), or at once
	// when writes ends (the leadership is lost).
	run := func(ctx, writes context.Context) {
		m.Leader.Set(1)
		defer m.Leader.Set(0)
		rl.fleet.run(ctx, writes)
	}
	if opts.LeaderElection == nil {
		run(ctx, context.WithoutCancel(ctx))
		log.Info("stopped: reconciles in flight finished")
		return nil
	}
	le := *opts.LeaderElection
	le.owner = owner
	le.watchDog = leaderelection.NewLeaderHealthzAdaptor(LeaderHealthTimeout)
	health.Add("leader-election", le.watchDog.Check)
	return lead(ctx, client, le, run, log)
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

// warnUnservedClaimUpdates says, once at start, which modules would act on
// VolumeClaimUpdates the API server does not serve: their input never holds
// one, so without the warning they would wait for nothing, silently.
func warnUnservedClaimUpdates(log *slog.Logger, cache *kube.Cache, mods []loaded) {
	served := cache.Informer(abi.KindVolumeClaimUpdate) != nil
	for _, name := range claimUpdateModules(served, mods) {
		log.Warn("the API server does not serve volumeclaimupdates.kubeplug.dev, so this module sees none: "+
			"apply deploy/crds/volumeclaimupdate-crd.yaml, then restart the host", "module", name)
	}
}

// claimUpdateModules names the modules granted to write VolumeClaimUpdates'
// status, when the API server does not serve them.
func claimUpdateModules(served bool, mods []loaded) []string {
	if served {
		return nil
	}
	var out []string
	for _, l := range mods {
		for _, c := range l.mod.Allowed {
			if c.Allows(abi.ActionUpdateClaimUpdateStatus, kube.ClaimUpdateGVR.Resource) {
				out = append(out, l.mod.Name)
				break
			}
		}
	}
	return out
}
