package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/metrics"
	"github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// Guest is a loaded module as the controller calls it. *runtime.Module
// and *runtime.Plugin (an Extism plugin) implement it; tests use fakes.
// The admit hook is admission.Admitter's: the webhook server and kubeplug
// test take it from the same module.
type Guest interface {
	Manifest() abi.Manifest
	Reconcile(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error)
	// Close is called once, when the module was swapped out or removed and
	// its last call has ended.
	Close(ctx context.Context) error
}

var (
	_ Guest = (*runtime.Module)(nil)
	_ Guest = (*runtime.Plugin)(nil)
)

// Module is a loaded module and how the host configuration runs it.
type Module struct {
	// Runtime is the loaded module.
	Runtime Guest
	// Name names the module in metrics, logs and events.
	Name string
	// Namespaces limits the subjects to these namespaces; empty is all.
	// Cluster-scoped subjects ignore it.
	Namespaces []string
	// Selector limits the subjects to objects whose labels match; nil is
	// every object.
	Selector labels.Selector
	// Config is handed to the module with every reconcile.
	Config []byte
	// Shadow computes and records actions and executes none.
	Shadow bool
	// Workers is the number of concurrent reconciles; default 2.
	Workers int
	// Generation numbers this load of the module for logs: 0 takes 1 in
	// New, and one more than the module it replaces in Swap.
	Generation uint64
	// Allowed are the capabilities the executor grants the module: what
	// config.Module.Grant returned, the manifest's each checked within the
	// operator's allow: list. nil takes the manifest's as they are, for
	// callers that hold no host configuration.
	Allowed []abi.Capability
	// Subject is what the module reconciles: its declaration, resolved
	// against the API server (snapshot.SubjectOf of the resolved manifest).
	// nil takes the manifest's built-in subject.
	Subject snapshot.Subject
}

// SubjectOf is mod's subject: the one it was given, else its manifest's
// built-in one, else one whose every build fails saying why (a manifest
// the host's load would have refused).
func SubjectOf(mod Module) snapshot.Subject {
	if mod.Subject != nil {
		return mod.Subject
	}
	s, err := snapshot.SubjectOf(mod.Runtime.Manifest())
	if err != nil {
		return unknownSubject{name: mod.Runtime.Manifest().Subject, err: err}
	}
	return s
}

// unknownSubject is a subject the host cannot serve: every build fails.
type unknownSubject struct {
	name string
	err  error
}

func (u unknownSubject) Name() string     { return u.name }
func (u unknownSubject) Kind() string     { return "" }
func (u unknownSubject) Namespaced() bool { return false }
func (u unknownSubject) Build(*snapshot.Builder, string, []byte) (*abi.ReconcileRequest, error) {
	return nil, u.err
}
func (u unknownSubject) RelatedKeys() map[string]snapshot.KeysFunc { return nil }

// Deps are what every controller of a host shares.
type Deps struct {
	Lister  snapshot.Lister
	Cluster actions.Cluster
	// Volumes deletes backing volumes through CSI; nil refuses deleteVolume.
	Volumes actions.VolumeDeleter
	// Drivers lists the CSI drivers the host may act for.
	Drivers func() []string
	Metrics *metrics.Metrics
	// WorkQueues, when set, reports each controller's queue in the
	// workqueue_* series (the live host's); nil reports none, for callers
	// that call controllers and never queue (kubeplug test and check make
	// thousands, and a queue with metrics keeps a goroutine ticking).
	WorkQueues *metrics.WorkQueues
	Logger     *slog.Logger
	// Now is the clock given to modules; nil is time.Now.
	Now func() time.Time
	// ReconcileTimeout bounds one whole reconcile, every API and CSI call
	// it makes included, so that a drain ends however slow the API server
	// or a driver is; default DefaultReconcileTimeout.
	ReconcileTimeout time.Duration
	// ShadowSettle is how long a module in shadow mode without
	// compareWith may ask for writes on a subject before that counts as a
	// disagreement with the cluster; default DefaultShadowSettle.
	ShadowSettle time.Duration
}

// DefaultReconcileTimeout is Deps.ReconcileTimeout's default: far above a
// reconcile's usual milliseconds, and below the 60s a pod's default
// termination grace period leaves a drain.
const DefaultReconcileTimeout = 30 * time.Second

// The range of requeue delays a module may ask for. A shorter delay would
// let a module spin the host (a requeue of 1ms is a busy loop); a longer one
// overflows time.Duration or means "never", which a module says by not
// asking. A delay outside is clamped to the nearest bound and logged.
const (
	MinRequeue = time.Second
	MaxRequeue = 24 * time.Hour
)

// Controller reconciles the subjects of one module. It holds the module
// through a handle that Swap replaces atomically (see handle).
type Controller struct {
	name    string
	subject snapshot.Subject
	workers int
	deps    Deps
	builder *snapshot.Builder
	queue   workqueue.TypedRateLimitingInterface[string]
	order   *changesFirst // the queue's storage: changes before resyncs
	log     *slog.Logger
	h       handle
	shadowSet
	writes writes
	// diffs: in shadow mode, the subjects the cluster does not show as
	// the module would make them (see compareWithCluster).
	diffs clusterDiffs
}

// New returns the controller of mod. Nothing runs until Run.
func New(mod Module, deps Deps) *Controller {
	if mod.Workers <= 0 {
		mod.Workers = 2
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.ReconcileTimeout <= 0 {
		deps.ReconcileTimeout = DefaultReconcileTimeout
	}
	if deps.ShadowSettle <= 0 {
		deps.ShadowSettle = DefaultShadowSettle
	}
	g := newGeneration(mod, deps)
	if g.n == 0 {
		g.n = 1
	}
	log := deps.Logger.With("module", mod.Name)
	if deps.Metrics != nil {
		initSeries(deps.Metrics, mod.Name, g.manifest.Capabilities, mod.Shadow)
	}
	order := newChangesFirst()
	var queueMetrics workqueue.MetricsProvider // nil: none
	if deps.WorkQueues != nil {
		queueMetrics = deps.WorkQueues
	}
	return &Controller{
		name:    mod.Name,
		subject: SubjectOf(mod),
		workers: mod.Workers,
		deps:    deps,
		builder: &snapshot.Builder{Lister: deps.Lister, Drivers: deps.Drivers, Now: deps.Now},
		queue:   newQueue(mod.Name, order, queueMetrics),
		order:   order,
		log:     log,
		h:       handle{cur: g, log: log},
	}
}

// Swap makes mod the controller's module from the next reconcile on and
// returns its generation number: reconciles in flight finish on the module
// they started on, which is closed when the last of them ends. mod must
// have the controller's name and subject (a module of another subject is a
// new controller); its Workers is ignored, the controller's workers stay.
// The caller queues every subject again (EnqueueAll), so that the new module
// decides on each.
func (c *Controller) Swap(mod Module) (uint64, error) {
	if mod.Name != c.name {
		return 0, fmt.Errorf("swap module %q into the controller of %q: %w", mod.Name, c.name, ErrSwap)
	}
	if got := SubjectOf(mod).Name(); got != c.subject.Name() {
		return 0, fmt.Errorf("swap module %q: its subject is %q, the controller's %q: %w", c.name, got, c.subject.Name(), ErrSwap)
	}
	g := newGeneration(mod, c.deps)
	if m := c.deps.Metrics; m != nil {
		initSeries(m, c.name, g.manifest.Capabilities, mod.Shadow)
	}
	old := c.h.swap(g)
	c.log.Debug("module swapped", "generation", g.n, "replaced", old, "version", g.manifest.Version)
	return g.n, nil
}

// Generation is the number of the module generation that new reconciles
// call: 1 for the module New was given, one more for each Swap.
func (c *Controller) Generation() uint64 { return c.h.current().n }

// Close retires the controller's module, once Run has returned, and waits
// (until ctx ends) for it and every module swapped out before it to be
// closed. Its queue is shut down, if Run never did, and its workqueue_*
// series go with it: a controller of the same name made later starts them
// afresh.
func (c *Controller) Close(ctx context.Context) error {
	c.queue.ShutDown()
	if wq := c.deps.WorkQueues; wq != nil {
		wq.Forget(c.name)
	}
	return c.h.closeAll(ctx, c.name)
}

// Name is the module's name.
func (c *Controller) Name() string { return c.name }

// Subject is what the module reconciles.
func (c *Controller) Subject() snapshot.Subject { return c.subject }

// Enqueue queues key for a reconcile unless its namespace is out of the
// module's scope. Keys queued twice before a worker takes them are
// reconciled once.
func (c *Controller) Enqueue(key string) {
	if !c.inScope(key) {
		return
	}
	c.order.mark(key)
	c.queue.Add(key)
}

// EnqueueResync is Enqueue for a key an informer's resync queued: it is
// reconciled after every key queued by a change (see changesFirst).
func (c *Controller) EnqueueResync(key string) {
	if !c.inScope(key) {
		return
	}
	c.queue.Add(key)
}

func (c *Controller) inScope(key string) bool {
	return inScope(c.h.current(), c.subject, key)
}

func inScope(g *generation, subject snapshot.Subject, key string) bool {
	if !subject.Namespaced() {
		return true
	}
	ns, _, _ := cache.SplitMetaNamespaceKey(key) // a key without a namespace is in none
	return g.mod.InNamespace(ns)
}

// InNamespace reports whether the module reconciles subjects in namespace
// ns; it is the one test of Namespaces, for namespaced subjects.
func (m *Module) InNamespace(ns string) bool {
	return len(m.Namespaces) == 0 || slices.Contains(m.Namespaces, ns)
}

// Run runs the workers until ctx is done, then stops taking new keys, lets
// the reconciles in flight finish (each within Deps.ReconcileTimeout), and
// returns.
func (c *Controller) Run(ctx context.Context) { c.RunWhile(ctx, context.WithoutCancel(ctx)) }

// RunWhile is Run for a host that may write only while writes is live, the
// context of its leadership: when writes ends, the reconciles in flight are
// cancelled at once, so that none writes after another host could have
// taken the lease. ctx ending is a drain: they finish.
func (c *Controller) RunWhile(ctx, writes context.Context) {
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for c.next(ctx, writes) {
			}
		})
	}
	wg.Go(func() { c.reportDepth(ctx) })
	<-ctx.Done()
	c.queue.ShutDownWithDrain()
	wg.Wait()
}

// reportDepth keeps the queue-depth gauge current.
func (c *Controller) reportDepth(ctx context.Context) {
	if c.deps.Metrics == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		c.deps.Metrics.QueueDepth.WithLabelValues(c.name).Set(float64(c.queue.Len()))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// next takes one key and reconciles it; false once the queue is shut down.
func (c *Controller) next(ctx, writes context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	// After shutdown the queue still hands out the keys it holds; they
	// wait for the next start (or the next leader).
	if ctx.Err() != nil {
		return false
	}
	// A reconcile started before shutdown finishes: its writes are
	// preconditioned, but stopping it halfway would leave a result half
	// carried out until the next start. It is bounded all the same, and
	// ends when the leadership its writes rely on ends.
	rctx, cancel := context.WithTimeout(writes, c.deps.ReconcileTimeout)
	defer cancel()
	out := c.Reconcile(rctx, key)
	switch {
	case out.Retry:
		c.order.mark(key) // a retry is the work of a change, not of a resync
		c.queue.AddRateLimited(key)
	case out.RequeueAfter > 0:
		c.queue.Forget(key)
		c.order.mark(key)
		c.queue.AddAfter(key, out.RequeueAfter)
	default:
		c.queue.Forget(key)
	}
	return true
}

// Outcome is what one reconcile came to: the (Result, error) pair that says
// when its key is reconciled again (see Requeue), and what it did.
type Outcome struct {
	// Result is the metric label of the reconcile, derived from
	// RequeueAfter and Err by outcome: success, requeue, conflict, refused
	// or error; or stale, for a reconcile put off until the caches show
	// the host's own last writes, which the reconcile series do not count.
	Result string
	// Report lists what became of each action; empty when the module was
	// not called or failed.
	Report actions.Report
	// RequeueAfter is the Result's: the module's request for another
	// reconcile, within MinRequeue and MaxRequeue.
	RequeueAfter time.Duration
	// Actions are the actions the module returned, as it returned them.
	Actions []abi.Action
	// Retry says the key is reconciled again with backoff: Err is set and
	// not a TerminalError (a refused action).
	Retry bool
	// Err says what went wrong, if anything.
	Err error
}

// Requeue returns the outcome in controller-runtime's shape.
func (o Outcome) Requeue() (Result, error) { return Result{RequeueAfter: o.RequeueAfter}, o.Err }

// Reconcile reconciles key once: check that the subject is in the module's
// namespaces and matches its selector, build the input from the caches, call
// the module, execute its result. A conflict or failure asks for a retry
// with backoff; a refusal is a TerminalError, as the module would only ask
// again for the same thing: the next change to the subject reconciles it
// again.
//
// It is the one reconcile pipeline: the workers of Run call it, and so does
// `kubeplug test` for every subject of every round. A panic on the way (in
// the host's code, whatever the module returned) is recovered here, as
// controller-runtime does at its worker boundary: logged with the module and
// key, counted, and retried with backoff, so that the host keeps serving
// every other key and module.
func (c *Controller) Reconcile(ctx context.Context, key string) (out Outcome) {
	start := time.Now()
	stale := false
	defer func() {
		if v := recover(); v != nil {
			out = Outcome{Err: fmt.Errorf("%w: %v", ErrPanic, v)}
			c.log.Error("reconcile panicked", "key", key, "panic", v, "stack", string(debug.Stack()))
			if m := c.deps.Metrics; m != nil {
				m.Panics.WithLabelValues(c.name).Inc()
			}
		}
		out.Result = outcome(out.Requeue())
		out.Retry = out.Err != nil && !IsTerminal(out.Err)
		if stale {
			out.Result = resultStale
		}
		if m := c.deps.Metrics; m != nil && !stale {
			m.Reconciles.WithLabelValues(c.name, out.Result).Inc()
			m.ReconcileSeconds.WithLabelValues(c.name).Observe(time.Since(start).Seconds())
		}
		switch {
		case out.Err != nil:
			c.log.Warn("reconcile", "key", key, "result", out.Result, "err", out.Err)
		default:
			c.log.Debug("reconcile", "key", key, "result", out.Result, "actions", len(out.Report.Actions))
		}
	}()
	res, err := c.reconcile(ctx, key, &out, &stale)
	out.RequeueAfter, out.Err = res.RequeueAfter, err
	return out
}

// reconcile is Reconcile's pipeline. It fills in out's Report and Actions,
// and sets stale for a reconcile put off until the caches catch up.
func (c *Controller) reconcile(ctx context.Context, key string, out *Outcome, stale *bool) (Result, error) {
	// The generation is held from here to the end: the whole reconcile
	// sees one module and one entry, and a swap does not close it under
	// the call.
	g := c.h.acquire()
	defer c.h.release(g)
	if !inScope(g, c.subject, key) {
		return Result{}, nil
	}
	req, err := c.subject.Build(c.builder, key, g.mod.Config)
	if err != nil {
		return Result{}, fmt.Errorf("build input: %w", err)
	}
	if req == nil {
		c.writes.forget(key)
		c.forgetDiff(key)
		return Result{}, nil
	}
	if !selected(g, req) {
		return Result{}, nil
	}
	if ref, isStale := c.writes.stale(key, req); isStale {
		c.log.Debug("input predates the host's own write; waiting for the cache", "key", key, "object", ref)
		if m := c.deps.Metrics; m != nil {
			m.StaleInputs.WithLabelValues(c.name).Inc()
		}
		*stale = true
		return Result{RequeueAfter: staleRetry}, nil
	}

	compare := c.callShadows(ctx, req)
	callStart := time.Now()
	res, err := g.mod.Runtime.Reconcile(ctx, req)
	if m := c.deps.Metrics; m != nil {
		m.GuestCallSeconds.WithLabelValues(c.name).Observe(time.Since(callStart).Seconds())
	}
	// A module that failed decided nothing to compare with.
	compare(res, err == nil)
	if err == nil && g.firstCall.CompareAndSwap(false, true) && g.n > 1 {
		// What an operator watching a swap waits for, and what its
		// latency is measured to.
		c.log.Info("module generation served its first call", "generation", g.n, "key", key)
	}
	if err != nil {
		if m := c.deps.Metrics; m != nil {
			m.GuestErrors.WithLabelValues(c.name, callErrorKind(err)).Inc()
		}
		return Result{}, err
	}

	if res == nil {
		res = &abi.Result{}
	}
	rep, err := g.exec.Execute(ctx, g.manifest, req, res)
	c.writes.record(key, rep)
	c.countActions(rep)
	c.recordExecuted(ctx, rep)
	out.Report, out.Actions = rep, res.Actions
	var result Result
	if res.RequeueAfterMillis > 0 {
		result.RequeueAfter = c.requeueAfter(key, res.RequeueAfterMillis)
	}
	if g.exec.Shadow {
		// Nothing was written: look again when a difference from the
		// cluster should have settled, even if no event comes.
		if d := c.compareWithCluster(key, g.n, rep); d > 0 && (result.RequeueAfter == 0 || d < result.RequeueAfter) {
			result.RequeueAfter = d
		}
	}
	if errors.Is(err, actions.ErrRefused) {
		err = TerminalError(err)
	}
	return result, err
}

// callErrorKind is the kind label of a failed guest call.
func callErrorKind(err error) string {
	var ce *runtime.CallError
	if errors.As(err, &ce) {
		return ce.Kind.String()
	}
	return "other"
}

// selected reports whether the subject's labels match the module's
// selector.
func selected(g *generation, req *abi.ReconcileRequest) bool {
	if g.mod.Selector.Empty() {
		return true
	}
	var l map[string]string
	if _, m, ok := req.SubjectObject(); ok {
		l = m.Labels
	}
	return g.mod.Selector.Matches(labels.Set(l))
}

// requeueAfter returns the delay a module asked for, clamped to MinRequeue
// and MaxRequeue. It compares milliseconds before converting, as 2^62 ms
// overflows a time.Duration.
func (c *Controller) requeueAfter(key string, ms int64) time.Duration {
	switch {
	case ms < MinRequeue.Milliseconds():
		c.log.Warn("requeue delay clamped", "key", key, "askedMillis", ms, "delay", MinRequeue)
		return MinRequeue
	case ms > MaxRequeue.Milliseconds():
		c.log.Warn("requeue delay clamped", "key", key, "askedMillis", ms, "delay", MaxRequeue)
		return MaxRequeue
	}
	return time.Duration(ms) * time.Millisecond
}

// countActions counts each action under its type, or under UnknownAction
// for a type the host does not know: the type is the module's to choose, and
// as a label value it could mint one series per string, or crash the host
// with invalid UTF-8.
func (c *Controller) countActions(rep actions.Report) {
	m := c.deps.Metrics
	if m == nil {
		return
	}
	for _, a := range rep.Actions {
		m.Actions.WithLabelValues(c.name, ActionLabel(a.Type), string(a.Outcome)).Inc()
	}
}

// UnknownAction is the type label of actions whose type the host does not
// know.
const UnknownAction = "unknown"

// ActionLabel returns t when it is an action type of abi.ActionTypes(), else
// UnknownAction.
func ActionLabel(t string) string {
	if abi.ActionType(t).Known() {
		return t
	}
	return UnknownAction
}

// recordExecuted records a Normal event on each object an action wrote, so
// that `kubectl describe` shows which module did what, and a Warning event
// on the target of an action whose call failed (a CSI DeleteVolume the
// driver refused, say), so that the object says why it is stuck.
func (c *Controller) recordExecuted(ctx context.Context, rep actions.Report) {
	for _, a := range rep.Actions {
		eventType, reason, ok := event(a)
		if !ok {
			continue
		}
		msg := fmt.Sprintf("%s%s: %s: %s", writeRecordPrefix, c.name, a.Type, a.Write)
		if a.Outcome == actions.Failed {
			msg = fmt.Sprintf("kubeplug module %s: %s failed, will retry: %v", c.name, a.Type, a.Err)
		}
		if err := c.deps.Cluster.RecordEvent(ctx, a.Target, eventType, reason, msg, c.name); err != nil {
			c.log.Warn("record action event", "target", a.Target, "err", err)
		}
	}
}

// writeRecordPrefix starts the message of the Normal event recorded for
// each write.
const writeRecordPrefix = "kubeplug module "

// IsWriteRecord reports whether an event of eventType with message is one the
// controller records for a write it carried out (as opposed to one a module
// emitted, or a Warning about a refused or failed action): `kubeplug test`
// leaves these out of a case's events, as they repeat the writes it checks.
func IsWriteRecord(eventType, message string) bool {
	return eventType == abi.EventNormal && strings.HasPrefix(message, writeRecordPrefix)
}

// initSeries creates the module's series at zero, so that a scrape shows
// every series from the start and rates work from the first event; a module
// in shadow mode has its comparison with the cluster's.
func initSeries(m *metrics.Metrics, name string, caps []abi.Capability, shadow bool) {
	if shadow {
		m.ShadowAgreements.WithLabelValues(name, CompareCluster)
		m.ShadowDisagreements.WithLabelValues(name, CompareCluster)
		m.ShadowDiffering.WithLabelValues(name)
	}
	for _, r := range outcomes {
		m.Reconciles.WithLabelValues(name, r)
	}
	m.ReconcileSeconds.WithLabelValues(name)
	m.GuestCallSeconds.WithLabelValues(name)
	m.QueueDepth.WithLabelValues(name)
	m.Panics.WithLabelValues(name)
	for _, k := range runtime.ErrorKinds() {
		m.GuestErrors.WithLabelValues(name, k.String())
	}
	for _, c := range caps {
		for _, o := range actions.Outcomes() {
			m.Actions.WithLabelValues(name, ActionLabel(c.Action), string(o))
		}
	}
}
