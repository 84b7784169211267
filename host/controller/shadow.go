package controller

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/kubeplug/kubeplug/abi"
)

// Shadow is a module in shadow mode compared with a controller's module
// (compareWith: in host.yaml): on every reconcile of that controller it is
// called with the same input, built once, and its result is compared with
// the module's (see Compare); it executes nothing. It holds its module
// through a handle, as a controller does, so that the module is closed only
// once the last call into it has ended. A changed module is a new Shadow,
// attached in place of the old one with Controller.Compare.
type Shadow struct {
	name    string
	subject string // the name of what it reconciles (snapshot.Subject)
	h       handle
	log     *slog.Logger
}

// NewShadow returns the shadow of mod, to be attached to a controller with
// Controller.Compare. Only mod's Runtime, Name, Config, Generation and
// Subject are used: the shadow runs on the subjects of the controller it is
// attached to.
func NewShadow(mod Module, deps Deps) *Shadow {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	g := newGeneration(mod, deps)
	if g.n == 0 {
		g.n = 1
	}
	log := deps.Logger.With("module", mod.Name)
	return &Shadow{name: mod.Name, subject: SubjectOf(mod).Name(), h: handle{cur: g, log: log}, log: log}
}

// Name is the shadow module's name.
func (s *Shadow) Name() string { return s.name }

// Subject names what the shadow module reconciles (snapshot.Subject.Name).
func (s *Shadow) Subject() string { return s.subject }

// Generation is the number of the shadow module's current generation.
func (s *Shadow) Generation() uint64 { return s.h.current().n }

// Close retires the shadow's module and waits (until ctx ends) for it to
// be closed. Detach it from its controller first.
func (s *Shadow) Close(ctx context.Context) error {
	return s.h.closeAll(ctx, s.name)
}

// Compare attaches s to c: from the next reconcile on, s is called with the
// same input as c's module and the results are compared. s must have c's
// subject.
func (c *Controller) Compare(s *Shadow) error {
	if got := s.Subject(); got != c.subject.Name() {
		return fmt.Errorf("module %q in shadow compares with %q: its subject is %q, the other's %q: compareWith must name a module of the same subject",
			s.name, c.name, got, c.subject.Name())
	}
	c.shadowMu.Lock()
	defer c.shadowMu.Unlock()
	c.shadows = append(slices.DeleteFunc(slices.Clone(c.shadows), func(o *Shadow) bool { return o.name == s.name }), s)
	return nil
}

// StopComparing detaches the shadow called name from c.
func (c *Controller) StopComparing(name string) {
	c.shadowMu.Lock()
	defer c.shadowMu.Unlock()
	c.shadows = slices.DeleteFunc(slices.Clone(c.shadows), func(o *Shadow) bool { return o.name == name })
}

// shadowSet is the shadows attached to a controller; its slice is replaced,
// never changed in place, so a reconcile may range over a copy.
type shadowSet struct {
	shadowMu sync.Mutex
	shadows  []*Shadow
}

func (c *Controller) attached() []*Shadow {
	c.shadowMu.Lock()
	defer c.shadowMu.Unlock()
	return c.shadows
}

// callShadows starts a call of every attached shadow with req (its own
// configuration in place of the controller's), beside the controller's own
// call; the returned function waits for them and compares each result with
// res, the controller's module's, when ok (the call succeeded: a module
// that failed decided nothing to compare with).
func (c *Controller) callShadows(ctx context.Context, req *abi.ReconcileRequest) func(res *abi.Result, ok bool) {
	shadows := c.attached()
	if len(shadows) == 0 {
		return func(*abi.Result, bool) {}
	}
	type answer struct {
		res *abi.Result
		err error
		gen uint64
	}
	answers := make([]answer, len(shadows))
	var wg sync.WaitGroup
	for i, s := range shadows {
		g := s.h.acquire()
		in := *req
		in.Config = g.mod.Config
		wg.Go(func() {
			defer s.h.release(g)
			// This goroutine is outside Reconcile's recover: a guest
			// implementation that panics must fail this call only.
			defer func() {
				if v := recover(); v != nil {
					answers[i] = answer{err: fmt.Errorf("%w: %v", ErrPanic, v), gen: g.n}
				}
			}()
			start := time.Now()
			res, err := g.mod.Runtime.Reconcile(ctx, &in)
			if m := c.deps.Metrics; m != nil {
				m.GuestCallSeconds.WithLabelValues(s.name).Observe(time.Since(start).Seconds())
			}
			answers[i] = answer{res: res, err: err, gen: g.n}
		})
	}
	return func(res *abi.Result, ok bool) {
		wg.Wait()
		if !ok {
			return
		}
		if res == nil {
			res = &abi.Result{}
		}
		for i, s := range shadows {
			a := answers[i]
			if a.err != nil {
				s.log.Warn("shadow reconcile failed: nothing compared", "key", req.Key, "compareWith", c.name, "err", a.err)
				if m := c.deps.Metrics; m != nil {
					m.GuestErrors.WithLabelValues(s.name, callErrorKind(a.err)).Inc()
				}
				continue
			}
			cmp := Compare(res, a.res)
			if m := c.deps.Metrics; m != nil {
				if cmp.Agree {
					m.ShadowAgreements.WithLabelValues(s.name, c.name).Inc()
				} else {
					m.ShadowDisagreements.WithLabelValues(s.name, c.name).Inc()
				}
			}
			if cmp.Agree {
				s.log.Debug("shadow agrees", "key", req.Key, "compareWith", c.name)
				continue
			}
			var shadowActions []abi.Action
			if a.res != nil {
				shadowActions = a.res.Actions
			}
			s.log.Info("shadow disagrees", "key", req.Key, "compareWith", c.name, "generation", a.gen,
				"diff", cmp.Diff, "actions", actionList(res.Actions), "shadowActions", actionList(shadowActions))
		}
	}
}
