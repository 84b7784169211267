package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/metrics"
	"github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// Module is a loaded module and how the host configuration runs it.
type Module struct {
	// Runtime is the loaded module.
	Runtime *runtime.Module
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
}

// Deps are what every controller of a host shares.
type Deps struct {
	Lister  snapshot.Lister
	Cluster actions.Cluster
	// Volumes deletes backing volumes through CSI; nil refuses deleteVolume.
	Volumes actions.VolumeDeleter
	// Drivers lists the CSI drivers the host may act for.
	Drivers func() []string
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// Now is the clock given to modules; nil is time.Now.
	Now func() time.Time
}

// Controller reconciles the subjects of one module.
type Controller struct {
	mod     Module
	subject string
	deps    Deps
	builder *snapshot.Builder
	exec    *actions.Executor
	queue   workqueue.TypedRateLimitingInterface[string]
	log     *slog.Logger
}

// New returns the controller of mod. Nothing runs until Run.
func New(mod Module, deps Deps) *Controller {
	if mod.Workers <= 0 {
		mod.Workers = 2
	}
	if mod.Selector == nil {
		mod.Selector = labels.Everything()
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	log := deps.Logger.With("module", mod.Name)
	if deps.Metrics != nil {
		initSeries(deps.Metrics, mod)
	}
	return &Controller{
		mod:     mod,
		subject: mod.Runtime.Manifest().Subject,
		deps:    deps,
		builder: &snapshot.Builder{Lister: deps.Lister, Drivers: deps.Drivers, Now: deps.Now},
		exec: &actions.Executor{
			Cluster: deps.Cluster,
			Volumes: deps.Volumes,
			Module:  mod.Name,
			Shadow:  mod.Shadow,
			Logger:  deps.Logger,
		},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: mod.Name},
		),
		log: log,
	}
}

// Name is the module's name.
func (c *Controller) Name() string { return c.mod.Name }

// Subject is the module's subject kind.
func (c *Controller) Subject() string { return c.subject }

// Enqueue queues key for a reconcile unless its namespace is out of the
// module's scope. Keys queued twice before a worker takes them are
// reconciled once.
func (c *Controller) Enqueue(key string) {
	if !c.inScope(key) {
		return
	}
	c.queue.Add(key)
}

func (c *Controller) inScope(key string) bool {
	if len(c.mod.Namespaces) == 0 || c.subject != abi.SubjectStatefulSet {
		return true
	}
	ns, _, _ := cut(key)
	for _, n := range c.mod.Namespaces {
		if n == ns {
			return true
		}
	}
	return false
}

// Run runs the workers until ctx is done, then stops taking new keys, lets
// the reconciles in flight finish, and returns.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range c.mod.Workers {
		wg.Go(func() {
			for c.next(ctx) {
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
		c.deps.Metrics.QueueDepth.WithLabelValues(c.mod.Name).Set(float64(c.queue.Len()))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// next takes one key and reconciles it; false once the queue is shut down.
func (c *Controller) next(ctx context.Context) bool {
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
	// carried out until the next start.
	out := c.Reconcile(context.WithoutCancel(ctx), key)
	switch {
	case out.Err != nil && out.Retry:
		c.queue.AddRateLimited(key)
	case out.RequeueAfter > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, out.RequeueAfter)
	default:
		c.queue.Forget(key)
	}
	return true
}

// Outcome is what one reconcile came to.
type Outcome struct {
	// Result is the metric label: success, requeue, conflict, refused or
	// error.
	Result string
	// Report lists what became of each action; empty when the module was
	// not called or failed.
	Report actions.Report
	// RequeueAfter is the module's request for another reconcile.
	RequeueAfter time.Duration
	// Retry asks for the key again with backoff.
	Retry bool
	// Err says what went wrong, if anything.
	Err error
}

// Reconcile reconciles key once: build the input from the caches, call the
// module, execute its result. A conflict or failure asks for a retry with
// backoff; a refusal does not, as the module would only ask again for the
// same thing: the next change to the subject reconciles it again.
func (c *Controller) Reconcile(ctx context.Context, key string) (out Outcome) {
	start := time.Now()
	defer func() {
		if m := c.deps.Metrics; m != nil {
			m.Reconciles.WithLabelValues(c.mod.Name, out.Result).Inc()
			m.ReconcileSeconds.WithLabelValues(c.mod.Name).Observe(time.Since(start).Seconds())
		}
		switch {
		case out.Err != nil:
			c.log.Warn("reconcile", "key", key, "result", out.Result, "err", out.Err)
		default:
			c.log.Debug("reconcile", "key", key, "result", out.Result, "actions", len(out.Report.Actions))
		}
	}()

	req, err := c.builder.Build(c.subject, key, c.mod.Config)
	if err != nil {
		return Outcome{Result: "error", Retry: true, Err: fmt.Errorf("build input: %w", err)}
	}
	if req == nil || !c.selected(req) {
		return Outcome{Result: "success"}
	}

	callStart := time.Now()
	res, err := c.mod.Runtime.Reconcile(ctx, req)
	if m := c.deps.Metrics; m != nil {
		m.GuestCallSeconds.WithLabelValues(c.mod.Name).Observe(time.Since(callStart).Seconds())
	}
	if err != nil {
		kind := "other"
		var ce *runtime.CallError
		if errors.As(err, &ce) {
			kind = ce.Kind.String()
		}
		if m := c.deps.Metrics; m != nil {
			m.GuestErrors.WithLabelValues(c.mod.Name, kind).Inc()
		}
		return Outcome{Result: "error", Retry: true, Err: err}
	}

	rep, err := c.exec.Execute(ctx, c.mod.Runtime.Manifest(), req, res)
	c.countActions(rep)
	c.recordExecuted(ctx, rep)
	out = Outcome{Report: rep, Result: "success"}
	if res.RequeueAfterMillis > 0 {
		out.RequeueAfter = time.Duration(res.RequeueAfterMillis) * time.Millisecond
		out.Result = "requeue"
	}
	switch {
	case err == nil:
	case errors.Is(err, actions.ErrRefused):
		out.Result, out.Err = "refused", err
	case errors.Is(err, actions.ErrConflict):
		out.Result, out.Err, out.Retry = "conflict", err, true
	default:
		out.Result, out.Err, out.Retry = "error", err, true
	}
	return out
}

// selected reports whether the subject's labels match the module's
// selector.
func (c *Controller) selected(req *abi.ReconcileRequest) bool {
	if c.mod.Selector.Empty() {
		return true
	}
	var l map[string]string
	switch {
	case req.StatefulSet != nil && req.StatefulSet.Set != nil:
		l = req.StatefulSet.Set.Metadata.Labels
	case req.PersistentVolume != nil && req.PersistentVolume.Volume != nil:
		l = req.PersistentVolume.Volume.Metadata.Labels
	}
	return c.mod.Selector.Matches(labels.Set(l))
}

func (c *Controller) countActions(rep actions.Report) {
	m := c.deps.Metrics
	if m == nil {
		return
	}
	for _, a := range rep.Actions {
		m.Actions.WithLabelValues(c.mod.Name, a.Type, string(a.Outcome)).Inc()
	}
}

// recordExecuted records a Normal event on each object an action wrote, so
// that `kubectl describe` shows which module did what, and a Warning event
// on the target of an action whose call failed (a CSI DeleteVolume the
// driver refused, say), so that the object says why it is stuck.
func (c *Controller) recordExecuted(ctx context.Context, rep actions.Report) {
	for _, a := range rep.Actions {
		var eventType, reason, msg string
		switch {
		case a.Outcome == actions.Executed && a.Type != abi.ActionEvent:
			eventType, reason = abi.EventNormal, actionReason(a.Type)
			msg = fmt.Sprintf("kubeplug module %s: %s: %s", c.mod.Name, a.Type, a.Write)
		case a.Outcome == actions.Failed:
			eventType, reason = abi.EventWarning, failureReason(a.Type)
			msg = fmt.Sprintf("kubeplug module %s: %s failed, will retry: %v", c.mod.Name, a.Type, a.Err)
		default:
			continue
		}
		if err := c.deps.Cluster.RecordEvent(ctx, a.Target, eventType, reason, msg, c.mod.Name); err != nil {
			c.log.Warn("record action event", "target", a.Target, "err", err)
		}
	}
}

// failureReason is the reason of the Warning event recording a failed
// action: external-provisioner's for a failed volume deletion, so that
// existing alerts on it keep working.
func failureReason(action string) string {
	if action == abi.ActionDeleteVolume {
		return "VolumeFailedDelete"
	}
	return "ActionFailed"
}

// actionReason is the reason of the event recording an executed action.
func actionReason(action string) string {
	switch action {
	case abi.ActionUpdateOwnerReferences:
		return "OwnerReferencesUpdated"
	case abi.ActionAddFinalizer:
		return "FinalizerAdded"
	case abi.ActionRemoveFinalizer:
		return "FinalizerRemoved"
	case abi.ActionDeleteObject:
		return "Deleted"
	case abi.ActionApplyClaim:
		return "ClaimApplied"
	case abi.ActionSetPartition:
		return "PartitionSet"
	case abi.ActionUpdateClaimUpdateStatus:
		return "StatusUpdated"
	case abi.ActionDeleteVolume:
		return "VolumeDeleted"
	}
	return "ActionExecuted"
}

func cut(key string) (ns, name string, ok bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}

// initSeries creates the module's series at zero, so that a scrape shows
// every series from the start and rates work from the first event.
func initSeries(m *metrics.Metrics, mod Module) {
	for _, r := range []string{"success", "requeue", "conflict", "refused", "error"} {
		m.Reconciles.WithLabelValues(mod.Name, r)
	}
	m.ReconcileSeconds.WithLabelValues(mod.Name)
	m.GuestCallSeconds.WithLabelValues(mod.Name)
	m.QueueDepth.WithLabelValues(mod.Name)
	for _, k := range runtime.ErrorKinds() {
		m.GuestErrors.WithLabelValues(mod.Name, k.String())
	}
	for _, c := range mod.Runtime.Manifest().Capabilities {
		for _, o := range actions.Outcomes() {
			m.Actions.WithLabelValues(mod.Name, c.Action, string(o))
		}
	}
}
