package app

import (
	"context"
	"log/slog"
	"sync"

	"github.com/kubeplug/kubeplug/host/controller"
)

// fleet is the host's set of controllers, which a reload changes while they
// run: a controller added while the host leads starts at once, one removed
// stops (its reconciles in flight finish) without touching the others.
type fleet struct {
	inf controller.Informers
	log *slog.Logger

	mu      sync.Mutex
	members map[string]*member
	// running holds the contexts of the controllers while the host runs
	// them (leads); nil before and after.
	running *runContexts
}

type runContexts struct {
	ctx, writes context.Context
	wg          sync.WaitGroup
}

// member is one controller of the fleet.
type member struct {
	ctrl   *controller.Controller
	wiring *controller.Wiring
	stop   context.CancelFunc // nil until started
	done   chan struct{}
}

func newFleet(inf controller.Informers, log *slog.Logger) *fleet {
	return &fleet{inf: inf, log: log, members: map[string]*member{}}
}

// add wires c to the informers (which replay every cached object to it) and
// starts it if the fleet runs.
func (f *fleet) add(c *controller.Controller) error {
	w, err := controller.WireOne(f.inf, c, f.log)
	if err != nil {
		return err
	}
	m := &member{ctrl: c, wiring: w}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members[c.Name()] = m
	if f.running != nil {
		f.start(m)
	}
	return nil
}

// start runs m under the fleet's contexts; f.mu is held.
func (f *fleet) start(m *member) {
	ctx, cancel := context.WithCancel(f.running.ctx)
	m.stop, m.done = cancel, make(chan struct{})
	writes := f.running.writes
	f.running.wg.Go(func() {
		defer close(m.done)
		m.ctrl.RunWhile(ctx, writes)
	})
}

// remove stops the controller called name: no more keys are queued, its
// reconciles in flight finish, and its module is closed.
func (f *fleet) remove(ctx context.Context, name string) {
	f.mu.Lock()
	m, ok := f.members[name]
	delete(f.members, name)
	f.mu.Unlock()
	if !ok {
		return
	}
	if err := m.wiring.Unwire(); err != nil {
		f.log.Warn("unwire controller", "module", name, "err", err)
	}
	if m.stop != nil {
		m.stop()
		<-m.done
	}
	if err := m.ctrl.Close(ctx); err != nil {
		f.log.Warn("close controller", "module", name, "err", err)
	}
}

// get returns the controller called name, or nil.
func (f *fleet) get(name string) *controller.Controller {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := f.members[name]; ok {
		return m.ctrl
	}
	return nil
}

// len is the number of controllers.
func (f *fleet) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.members)
}

// run runs every controller, and those added meanwhile, until ctx ends (they
// drain) or writes ends (the leadership is lost); see Controller.RunWhile.
func (f *fleet) run(ctx, writes context.Context) {
	f.mu.Lock()
	rc := &runContexts{ctx: ctx, writes: writes}
	f.running = rc
	for _, m := range f.members {
		f.start(m)
	}
	f.mu.Unlock()
	<-ctx.Done()
	f.mu.Lock()
	f.running = nil
	f.mu.Unlock()
	rc.wg.Wait()
}
