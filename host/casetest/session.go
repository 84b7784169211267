package casetest

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/memcluster"
	"github.com/kubeplug/kubeplug/host/metrics"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// Session is a case's in-memory cluster and the host reconciling it: the
// seam `kubeplug test` (Run) and `kubeplug check` (package check) share, so
// that both run the same rounds through controller.Reconcile. A Session is
// not safe for concurrent use.
type Session struct {
	Case    Case
	Module  controller.Module
	Cluster *memcluster.Cluster
	// Kind is the kind of the module's subjects.
	Kind    string
	Drivers []string
	Now     func() time.Time
	log     *slog.Logger
	ctrl    *controller.Controller
}

// NewSession loads c's objects into a fresh cluster and starts a host for
// mod on it, as Run does. c must be a reconcile case (no admit:).
func NewSession(mod controller.Module, c Case, log *slog.Logger) (*Session, error) {
	return newSession(mod, c, nil, log)
}

// Resume is NewSession on cluster, a state a run of c reached, instead of
// c's objects: kubeplug check resumes a run where a fresh host takes over
// rather than replay the run up to there.
func Resume(mod controller.Module, c Case, cluster *memcluster.Cluster, log *slog.Logger) (*Session, error) {
	return newSession(mod, c, cluster, log)
}

func newSession(mod controller.Module, c Case, cluster *memcluster.Cluster, log *slog.Logger) (*Session, error) {
	m := mod.Runtime.Manifest()
	if mod.Name == "" {
		mod.Name = m.Name
	}
	if c.Config != nil {
		mod.Config = c.Config
	}
	subject := mod.Subject
	if subject == nil {
		var err error
		if subject, err = snapshot.SubjectOf(m); err != nil {
			return nil, fmt.Errorf("kubeplug test cannot run it: %w", err)
		}
		mod.Subject = subject
	}
	kind := subject.Kind()
	now := c.Now
	if now.IsZero() {
		now = DefaultNow
	}
	s := &Session{Case: c, Module: mod, Kind: kind, Drivers: csiDrivers(c.Objects), log: log,
		Now: func() time.Time { return now }}
	s.Cluster = cluster
	if s.Cluster == nil {
		s.Cluster = memcluster.New(memcluster.Config{Now: s.Now, Drivers: s.Drivers})
		if err := s.Cluster.Load(c.Objects...); err != nil {
			return nil, fmt.Errorf("load objects: %w", err)
		}
	}
	s.Restart(nil, nil)
	return s, nil
}

// Deps are the host's dependencies on a fresh host, for the caller of
// Restart to wrap: the defaults read and write the session's cluster.
func (s *Session) Deps() controller.Deps {
	return controller.Deps{
		Lister:  s.Cluster,
		Cluster: s.Cluster,
		Volumes: s.Cluster,
		Drivers: func() []string { return s.Drivers },
		// A registry of its own per host: the metrics take the same path
		// as on the live host, so that a label a module could break them
		// with breaks the case too.
		Metrics: metrics.New(),
		Logger:  s.log,
		Now:     s.Now,
	}
}

// Restart replaces the host with a fresh one, as after a crash: a new
// controller with no memory of its own last writes, running guest (the
// session's module when nil) with deps (Deps() when nil).
func (s *Session) Restart(guest controller.Guest, deps *controller.Deps) {
	mod := s.Module
	if guest != nil {
		mod.Runtime = guest
	}
	// Every reconcile of a module with a projection is checked against the
	// whole request (projection.go).
	mod.Runtime = checkProjection(mod.Runtime)
	d := s.Deps()
	if deps != nil {
		d = *deps
	}
	s.ctrl = controller.New(mod, d)
}

// Round reconciles every subject once, in key order, as round n.
func (s *Session) Round(ctx context.Context, n int) (Round, error) {
	return runRound(ctx, n, s.ctrl, s.Kind, s.Cluster)
}

// Settle runs rounds from round first until one changes nothing, appending
// them to rounds; an error names the round, and a run still changing after
// MaxRounds rounds is an error (a write loop).
func (s *Session) Settle(ctx context.Context, first int, rounds *[]Round) error {
	for n := first; ; n++ {
		round, err := s.Round(ctx, n)
		*rounds = append(*rounds, round)
		if err != nil {
			return fmt.Errorf("round %d: %w", n, err)
		}
		if !round.Changed {
			return nil
		}
		if n-first+1 == MaxRounds {
			return fmt.Errorf("%w after %d rounds: round %d still %s", ErrNoConvergence, MaxRounds, n, changes(round))
		}
	}
}

// ErrNoConvergence is the error of rounds that never stop changing the
// cluster.
var ErrNoConvergence = fmt.Errorf("did not converge")
