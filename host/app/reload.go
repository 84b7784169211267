package app

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/admission"
	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/metrics"
	"github.com/kubeplug/kubeplug/host/oci"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// Reasons of the Warning events a refused reload records on the host's
// object (see hostObject).
const (
	ReasonModuleRejected = "ModuleRejected"
	ReasonConfigRejected = "ConfigRejected"
	// ReasonConfigPartlyApplied: the reload changed settings that take a
	// restart, and applied the rest.
	ReasonConfigPartlyApplied = "ConfigPartlyApplied"
)

// Reloader applies changes of the host configuration and of its module
// files to the running host. Every reload reads and validates the whole
// configuration first and applies nothing of a file that does not validate.
// Then each entry whose module file or settings changed is loaded and
// checked exactly as at start (loadEntry), in the background of the
// controllers, which go on serving: a module that fails keeps the one it
// would replace serving, and is reported in the log, as a Warning event and
// in kubeplug_module_swaps_total{result="failed"}. The modules that passed
// are then swapped in at once (a new generation of their controller), the
// entries added start their controllers, and those removed stop theirs.
type Reloader struct {
	path   string
	engine *runtime.Engine
	deps   controller.Deps
	fleet  *fleet
	m      *metrics.Metrics
	log    *slog.Logger
	host   abi.ObjectRef
	// ctx bounds loads and the drain of removed controllers: the host's.
	ctx context.Context
	// fetch is how image entries are pulled (oci.Fetch).
	fetch oci.FetchOptions
	// images follows the tags of image entries with resolveEvery; nil when
	// nothing follows them.
	images *oci.Watcher
	// webhook serves the admit hooks of the applied modules; nil when the
	// host serves no webhook.
	webhook *admission.Handler
	// retired are admit-only modules swapped out or removed, closed once
	// the webhook no longer serves them (publish).
	retired []controller.Guest

	// health is the reload loop's heartbeat, for /healthz.
	health reloadHealth

	mu   sync.Mutex // one reload at a time
	file *config.File
	// started is the configuration the host started with, whose
	// restart-only settings (restartOnly) it runs with until it stops.
	started *config.File
	applied map[string]*appliedEntry
	// pulls are the image entries being pulled, by module name: each in
	// its own goroutine, under its own deadline (the fetch's timeout) and
	// the host's context, outside mu, so that a registry that stalls holds
	// up its own module and no other, nor the next reload.
	pulls map[string]*pull
	// pulling counts the pulls' goroutines, for Run to wait for at exit
	// (stopPulls), after which stopped refuses new ones.
	pulling sync.WaitGroup
	stopped bool
}

// pull is an image entry's pull under way; a later reload's pull of the
// same module cancels it and takes its place.
type pull struct{ cancel context.CancelFunc }

// appliedEntry is a module entry as the host runs it.
type appliedEntry struct {
	cfg config.Module
	mod controller.Module
	sum string
	gen uint64
	// shadow is the entry's module when it is compared with another
	// (compareWith), attached to that module's controller.
	shadow *controller.Shadow
}

// loaded is a module loaded and checked against its entry, ready to run;
// src is what it was loaded from (its sha256 and, for an image, the digest).
type loaded struct {
	cfg config.Module
	mod controller.Module
	src *oci.Source
}

// readModule returns the bytes of c's module (its file, or its image pulled
// and its signature checked) and their sha256, the pin checked. The host
// reads a module's bytes through it, or, for an image pulled on its own,
// through the same oci.Fetch in startPull.
func (r *Reloader) readModule(ctx context.Context, c *config.Module) (*oci.Source, error) {
	return oci.Fetch(ctx, c, r.fetch)
}

// loadEntry loads src, the module of entry c, into engine, as a native
// module or an Extism plugin (runtime.Engine.LoadAny), and checks it
// against the entry: the one way a module gets into the host, at start and
// on every reload.
func loadEntry(ctx context.Context, engine *runtime.Engine, c *config.Module, src *oci.Source) (controller.Module, error) {
	rm, err := engine.LoadAny(ctx, src.Name, src.Wasm, c.Limits)
	if err != nil {
		return controller.Module{}, fmt.Errorf("module %s: %w", c.Name, err)
	}
	mod, err := EntryModule(c, rm)
	if err != nil {
		_ = rm.Close(ctx)
		return controller.Module{}, err
	}
	return mod, nil
}

// EntryModule checks rm, the loaded module of entry c, against the entry
// (config.Module.Accept) and returns it as the host runs it: named as the
// entry, with the entry's scope, configuration, mode and the capabilities
// granted. kubeplug run and kubeplug test --config both go through it.
func EntryModule(c *config.Module, rm runtime.Loaded) (controller.Module, error) {
	rm.SetName(c.Name)
	allowed, err := c.Accept(rm.Manifest())
	if err != nil {
		return controller.Module{}, err
	}
	return controller.Module{
		Runtime:    rm,
		Name:       c.Name,
		Namespaces: c.Namespaces,
		Selector:   c.LabelSelector,
		Config:     c.Config,
		Shadow:     c.Mode == config.ModeShadow,
		Workers:    c.Workers,
		Allowed:    allowed,
	}, nil
}

// loadAll reads and loads the module of every entry of file; at start,
// where any failure refuses the whole configuration. The modules are read
// at once, each image pulled under its own deadline, so that start waits
// for the slowest registry, not for the sum of them, and never longer than
// the fetch's timeout.
func (r *Reloader) loadAll(file *config.File) ([]loaded, error) {
	srcs := make([]*oci.Source, len(file.Modules))
	errs := make([]error, len(file.Modules))
	var wg sync.WaitGroup
	for i := range file.Modules {
		c := &file.Modules[i]
		if c.From().Remote() {
			r.log.Info("pulling the module's image", "module", c.Name, "image", c.Source())
		}
		wg.Go(func() { srcs[i], errs[i] = r.readModule(r.ctx, c) })
	}
	wg.Wait()
	var out []loaded
	for i := range file.Modules {
		c := &file.Modules[i]
		err := errs[i]
		var l loaded
		if err == nil {
			l, err = r.loadSource(c, srcs[i])
		}
		if err != nil {
			for _, l := range out {
				_ = l.mod.Runtime.Close(r.ctx)
			}
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, file.Path, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// loadSource loads src, the module of c read already.
func (r *Reloader) loadSource(c *config.Module, src *oci.Source) (loaded, error) {
	mod, err := loadEntry(r.ctx, r.engine, c, src)
	if err != nil {
		return loaded{}, err
	}
	return loaded{cfg: *c, mod: mod, src: src}, nil
}

// start starts the controllers of the modules loaded at start.
func (r *Reloader) start(file *config.File, mods []loaded) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.file, r.started = file, file
	r.initSwaps(file)
	for _, l := range inOrder(mods) {
		if err := r.add(l, 1); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrConfig, file.Path, err)
		}
	}
	return nil
}

// inOrder returns the modules that run on their own first, then those
// compared with them, which attach to their controllers.
func inOrder(mods []loaded) []loaded {
	out := slices.Clone(mods)
	slices.SortStableFunc(out, func(a, b loaded) int {
		return cmp.Compare(boolInt(a.cfg.CompareWith != ""), boolInt(b.cfg.CompareWith != ""))
	})
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// add starts the controller of l as generation gen.
func (r *Reloader) add(l loaded, gen uint64) error {
	l.mod.Generation = gen
	if l.cfg.CompareWith != "" {
		s := controller.NewShadow(l.mod, r.deps)
		if err := r.attach(l.cfg, s); err != nil {
			_ = s.Close(r.ctx)
			return err
		}
		r.record(l, gen)
		r.applied[l.cfg.Name].shadow = s
		return nil
	}
	if reconciles(l.mod) { // an admit-only module has no controller
		if err := r.fleet.add(controller.New(l.mod, r.deps)); err != nil {
			return err
		}
	}
	r.record(l, gen)
	return nil
}

// attach attaches s, the module of the entry c, to the controller of the
// module c compares with, in place of any shadow of the same name.
func (r *Reloader) attach(c config.Module, s *controller.Shadow) error {
	ctrl := r.fleet.get(c.CompareWith)
	if ctrl == nil {
		return fmt.Errorf("module %s: compareWith: %q does not run: fix that module first", c.Name, c.CompareWith)
	}
	return ctrl.Compare(s)
}

// removeEntry stops what runs the applied entry called name.
func (r *Reloader) removeEntry(name string) {
	old := r.applied[name]
	if old == nil {
		return
	}
	if old.shadow != nil {
		if ctrl := r.fleet.get(old.cfg.CompareWith); ctrl != nil {
			ctrl.StopComparing(name)
		}
		_ = old.shadow.Close(r.ctx)
	} else if r.fleet.get(name) != nil {
		r.fleet.remove(r.ctx, name)
	} else {
		r.retired = append(r.retired, old.mod.Runtime)
	}
	if r.images != nil {
		r.images.Stop(name)
	}
	delete(r.applied, name)
}

// record remembers l as applied and shows it in kubeplug_module_info.
func (r *Reloader) record(l loaded, gen uint64) {
	r.applied[l.cfg.Name] = &appliedEntry{cfg: l.cfg, mod: l.mod, sum: l.src.SHA256, gen: gen}
	if r.images != nil {
		r.images.Watch(l.cfg, l.src.Digest) // from the digest it was pulled from
	}
	man := l.mod.Runtime.Manifest()
	r.m.ModuleInfo.DeletePartialMatch(prometheus.Labels{"module": l.cfg.Name})
	// The version is the module's to choose: as a label it must be valid
	// UTF-8, or client_golang panics.
	r.m.ModuleInfo.WithLabelValues(l.cfg.Name, metrics.Label(man.Version), man.Subject, string(l.cfg.Mode), l.src.SHA256,
		strconv.FormatUint(gen, 10)).Set(1)
	r.log.Info("loaded module", "module", l.cfg.Name, "source", l.src.Name, "version", man.Version,
		"subject", man.Subject, "mode", l.cfg.Mode, "sha256", l.src.SHA256, "generation", gen)
}

// Reload reads the host configuration and the module files again and
// applies what changed (see Reloader). reason is logged. It returns once the
// reload is applied or refused, but for image entries, which are pulled
// each on its own and applied (or refused) when their pull ends; reloads
// run one at a time. It is what file
// changes and SIGHUP call, and what any other source of change (a moved
// image tag) should call.
func (r *Reloader) Reload(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.health.begin(time.Now())()
	r.log.Info("reloading", "reason", reason)
	file, err := config.Load(r.path)
	if err != nil {
		r.m.ConfigReloads.WithLabelValues("failed").Inc()
		r.m.ConfigLastReloadSuccessful.Set(0)
		r.refuse("", ReasonConfigRejected, fmt.Errorf("host configuration not reloaded, nothing of it applied, the modules running go on: %w", err))
		return
	}
	r.reportApplied(file)
	r.initSwaps(file)

	// Load every new or changed module file before applying any, so that
	// the controllers change together and the slow part runs while they
	// serve. Images are pulled each on its own (startPull) and applied
	// when their pull ends: a registry that stalls holds up only its own
	// module, until the pull's timeout, and never this reload or the next.
	var next []loaded
	want := map[string]bool{}
	for i := range file.Modules {
		c := &file.Modules[i]
		want[c.Name] = true
		if c.From().Remote() {
			r.startPull(*c)
			continue
		}
		r.stopPull(c.Name)
		src, err := r.readModule(r.ctx, c)
		if l, ok := r.changed(c, src, err); ok {
			next = append(next, l)
		}
	}
	for name := range r.pulls {
		if !want[name] {
			r.stopPull(name)
		}
	}
	for name := range r.applied {
		if !want[name] {
			r.removeEntry(name)
			r.m.ModuleInfo.DeletePartialMatch(prometheus.Labels{"module": name})
			r.log.Info("module removed: its controller stopped", "module", name)
		}
	}
	for _, l := range inOrder(next) {
		r.applyCounted(l)
	}
	r.file = file
	r.publish()
}

// initSwaps shows kubeplug_module_swaps_total of every entry of file at 0
// until it counts: an alert on its increase sees a module's first refused
// swap only if the series was there before it.
func (r *Reloader) initSwaps(file *config.File) {
	for _, c := range file.Modules {
		for _, result := range []string{"success", "failed"} {
			r.m.ModuleSwaps.WithLabelValues(c.Name, result)
		}
	}
}

// failed reports that the module of the entry name was not loaded: its
// file or image could not be read, or the module was refused.
func (r *Reloader) failed(name string, err error) {
	r.m.ModuleSwaps.WithLabelValues(name, "failed").Inc()
	what := "not added"
	if old := r.applied[name]; old != nil {
		what = fmt.Sprintf("not swapped, generation %d keeps serving", old.gen)
	}
	r.refuse(name, ReasonModuleRejected, fmt.Errorf("module %s %s: %w", name, what, err))
}

// startPull pulls the image of entry c in the background, in place of any
// pull of the same module under way, and applies it when the pull ends
// (pulled). The pull is bounded by the fetch's timeout and ends with the
// host's context (SIGTERM). Called with mu held.
func (r *Reloader) startPull(c config.Module) {
	r.stopPull(c.Name)
	if r.stopped {
		return
	}
	ctx, cancel := context.WithCancel(r.ctx)
	p := &pull{cancel: cancel}
	if r.pulls == nil {
		r.pulls = map[string]*pull{}
	}
	r.pulls[c.Name] = p
	r.log.Info("pulling the module's image", "module", c.Name, "image", c.Source())
	fo := r.fetch // read under mu, not from the goroutine
	r.pulling.Go(func() {
		defer cancel()
		src, err := oci.Fetch(ctx, &c, fo)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.pulls[c.Name] != p {
			return // a later reload pulls this module again, or dropped it
		}
		delete(r.pulls, c.Name)
		if r.ctx.Err() != nil {
			return // the host stops
		}
		r.pulled(&c, src, err)
		r.publish()
	})
}

// stopPull cancels the pull of the module name, if one is under way.
// Called with mu held.
func (r *Reloader) stopPull(name string) {
	if p := r.pulls[name]; p != nil {
		p.cancel()
		delete(r.pulls, name)
	}
}

// stopPulls cancels the pulls under way and waits for their goroutines
// to end; no pull starts after it.
func (r *Reloader) stopPulls() {
	r.mu.Lock()
	r.stopped = true
	for name := range r.pulls {
		r.stopPull(name)
	}
	r.mu.Unlock()
	r.pulling.Wait()
}

// pulled applies the module of the image entry c, whose pull returned src
// or err: as a reload applies a changed module file, and not at all when
// neither the entry nor the bytes changed. Called with mu held.
func (r *Reloader) pulled(c *config.Module, src *oci.Source, err error) {
	if l, ok := r.changed(c, src, err); ok {
		r.applyCounted(l)
	}
}

// changed returns the module of entry c loaded from src, which reading it
// returned (or err), when the entry or the bytes changed since it was
// applied. Reading a module is cheap beside loading it: only a module
// whose entry or bytes changed is loaded again, from the bytes read. A
// module that cannot be read or loaded is reported (failed).
func (r *Reloader) changed(c *config.Module, src *oci.Source, err error) (loaded, bool) {
	old := r.applied[c.Name]
	if err == nil && old != nil && old.cfg.SameAs(c) && src.SHA256 == old.sum {
		return loaded{}, false
	}
	var l loaded
	if err == nil {
		l, err = r.loadSource(c, src)
	}
	if err != nil {
		r.failed(c.Name, err)
		return loaded{}, false
	}
	return l, true
}

// applyCounted applies l (apply) and counts the swap's result.
func (r *Reloader) applyCounted(l loaded) {
	if err := r.apply(l); err != nil {
		_ = l.mod.Runtime.Close(r.ctx)
		r.m.ModuleSwaps.WithLabelValues(l.cfg.Name, "failed").Inc()
		r.refuse(l.cfg.Name, ReasonModuleRejected, err)
		return
	}
	r.m.ModuleSwaps.WithLabelValues(l.cfg.Name, "success").Inc()
}

// publish hands the webhook the admit hooks of the applied modules, and
// then closes the admit-only modules it served before and no longer does
// (each once its last call has ended).
func (r *Reloader) publish() {
	if r.webhook != nil {
		mods := make([]controller.Module, 0, len(r.applied))
		for _, e := range r.applied {
			mods = append(mods, e.mod)
		}
		r.webhook.SetModules(admitters(r.file, mods))
	}
	retired := r.retired
	r.retired = nil
	for _, g := range retired {
		go func() { _ = g.Close(r.ctx) }()
	}
}

// apply runs l in place of the module of the same name, or as a new one.
// A module of the same subject and workers is swapped into its controller;
// otherwise the controller is replaced, as its queue and workers are.
func (r *Reloader) apply(l loaded) error {
	name := l.cfg.Name
	old := r.applied[name]
	if old == nil {
		return r.add(l, 1)
	}
	gen := old.gen + 1
	if l.cfg.CompareWith != "" || old.shadow != nil {
		return r.replaceShadow(l, old, gen)
	}
	ctrl := r.fleet.get(name)
	if ctrl != nil && ctrl.Subject().Name() == controller.SubjectOf(l.mod).Name() && old.cfg.Workers == l.cfg.Workers {
		l.mod.Generation = gen
		// The webhook moves to the new module first: the controller closes
		// the old one once its last reconcile ends, and an admission call
		// must not reach it after that (Close lets calls in flight finish).
		prev := old.mod
		old.mod = l.mod
		r.publish()
		if _, err := ctrl.Swap(l.mod); err != nil {
			old.mod = prev
			r.publish()
			return err
		}
		r.record(l, gen)
		// The new module decides on every subject, not only those that
		// change from now on.
		controller.EnqueueAll(r.fleet.inf, ctrl)
		r.log.Info("module swapped", "module", name, "generation", gen)
		return nil
	}
	shadows := r.comparedWith(name)
	r.removeEntry(name)
	if err := r.add(l, gen); err != nil {
		return err
	}
	r.log.Info("module replaced: its controller restarted for a new subject or number of workers", "module", name, "generation", gen)
	// The modules compared with it follow it to its new controller.
	for _, e := range shadows {
		if err := r.attach(e.cfg, e.shadow); err != nil {
			r.refuse(e.cfg.Name, ReasonModuleRejected, fmt.Errorf("module %s no longer compared: %w", e.cfg.Name, err))
			r.removeEntry(e.cfg.Name)
		}
	}
	return nil
}

// comparedWith returns the applied entries compared with the module name.
func (r *Reloader) comparedWith(name string) []*appliedEntry {
	var out []*appliedEntry
	for _, e := range r.applied {
		if e.shadow != nil && e.cfg.CompareWith == name {
			out = append(out, e)
		}
	}
	return out
}

// replaceShadow runs l, an entry that is or was compared with another
// module, in place of old: a new shadow is attached in place of the old
// one, which is closed once its last call ends.
func (r *Reloader) replaceShadow(l loaded, old *appliedEntry, gen uint64) error {
	if old.shadow == nil || l.cfg.CompareWith == "" {
		// It ran on its own and is now compared, or the other way round.
		r.removeEntry(l.cfg.Name)
		return r.add(l, gen)
	}
	l.mod.Generation = gen
	s := controller.NewShadow(l.mod, r.deps)
	if err := r.attach(l.cfg, s); err != nil {
		_ = s.Close(r.ctx)
		return err
	}
	if old.cfg.CompareWith != l.cfg.CompareWith {
		if ctrl := r.fleet.get(old.cfg.CompareWith); ctrl != nil {
			ctrl.StopComparing(l.cfg.Name)
		}
	}
	_ = old.shadow.Close(r.ctx)
	r.record(l, gen)
	r.applied[l.cfg.Name].shadow = s
	r.log.Info("module swapped", "module", l.cfg.Name, "generation", gen, "compareWith", l.cfg.CompareWith)
	return nil
}

// refuse reports a reload that was not applied: in the log, and as a
// Warning event on the host's object.
func (r *Reloader) refuse(module, reason string, err error) {
	r.log.Error("reload refused", "module", module, "err", err)
	r.warning(module, reason, err)
}

// warning records err as a Warning event on the host's object, from module
// ("" for the host itself).
func (r *Reloader) warning(module, reason string, err error) {
	r.hostEvent(module, abi.EventWarning, reason, err.Error())
}

// hostEvent records an event on the host's object, from module ("" for the
// host itself).
func (r *Reloader) hostEvent(module, eventType, reason, message string) {
	msg := metrics.Clip(message, actions.MaxEventMessage)
	source := module
	if source == "" {
		source = "host"
	}
	if err := r.deps.Cluster.RecordEvent(r.ctx, r.host, eventType, reason, msg, source); err != nil {
		r.log.Warn("record the host's event", "reason", reason, "err", err)
	}
}

// reportApplied counts and reports a reload of file that validated: a
// success, or, when file changes settings the host sets up once at start
// (restartOnly), partly applied. Those are compared with the start's, not
// the last reload's: until a restart, every reload of such a file is
// partly applied, and says so.
func (r *Reloader) reportApplied(file *config.File) {
	r.m.ConfigLastReloadSuccessful.Set(1)
	fields := restartOnly(r.started, file)
	if len(fields) == 0 {
		r.m.ConfigReloads.WithLabelValues("success").Inc()
		return
	}
	r.m.ConfigReloads.WithLabelValues("partial").Inc()
	err := fmt.Errorf("host configuration partly applied: %s changed and take a restart, so the host goes on with those it started with; "+
		"the modules were reloaded. Restart the host (kubectl rollout restart) to apply them", strings.Join(fields, ", "))
	r.log.Warn("reload partly applied", "fields", fields, "err", err)
	r.warning("", ReasonConfigPartlyApplied, err)
}

// restartOnly names the settings of file that differ from those of
// running, which a reload cannot apply.
func restartOnly(running, file *config.File) []string {
	var fields []string
	if file.Resync != running.Resync {
		fields = append(fields, "resync")
	}
	if file.ReconcileTimeout != running.ReconcileTimeout {
		fields = append(fields, "reconcileTimeout")
	}
	if !reflect.DeepEqual(file.CSIDrivers, running.CSIDrivers) {
		fields = append(fields, "csiDrivers")
	}
	// The API client's rate and the informers' shard are set up once, at
	// start (Run, cacheOptions).
	if file.APIQPS != running.APIQPS {
		fields = append(fields, "apiQPS")
	}
	if file.Shard.Namespace != running.Shard.Namespace || selectorString(file.Shard.LabelSelector) != selectorString(running.Shard.LabelSelector) {
		fields = append(fields, "shard")
	}
	return fields
}

// selectorString is sel as a string, "" for none.
func selectorString(sel labels.Selector) string {
	if sel == nil {
		return ""
	}
	return sel.String()
}

// watchedFiles are the files whose changes reload the host: the host
// configuration and every module file it names.
func (r *Reloader) watchedFiles() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	files := []string{r.path}
	for _, c := range r.file.Modules {
		for _, f := range c.From().Files() {
			if f != "" && !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	return files
}

// hostObject is the object the host's own Warning events are recorded on:
// its Pod, named by the downward API's POD_NAMESPACE and POD_NAME (see
// deploy/), else a Pod named after the machine in default.
func hostObject() abi.ObjectRef {
	ns, name := os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME")
	if ns == "" {
		ns = "default"
	}
	if name == "" {
		name, _ = os.Hostname()
	}
	if name == "" {
		name = "kubeplug"
	}
	return abi.ObjectRef{Kind: abi.KindPod, Namespace: ns, Name: name}
}
