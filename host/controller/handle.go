package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// generation is one loaded module as a controller runs it: the guest, its
// entry's settings and the capabilities it is allowed. A swap replaces the
// whole generation, so that a reconcile sees one module and one entry from
// start to end, never the new guest with the old entry's allow: list.
type generation struct {
	mod      Module
	manifest abi.Manifest // the guest's, with the capabilities it is allowed
	exec     *actions.Executor
	n        uint64

	// refs counts the reconciles that hold this generation; retired is set
	// when another generation replaced it. Both are guarded by handle.mu.
	refs    int
	retired bool
	// firstCall is set by the first call that returns.
	firstCall atomic.Bool
}

// handle is how a controller holds its module: the current generation and
// a count of the calls into each. A reconcile acquires the current
// generation and releases it when done; a swap makes a new generation
// current and retires the old one, which is closed when its last reconcile
// releases it (at once when none holds it). So calls in flight finish on the
// module they started on, new calls go to the new one, and no module is
// closed under a call.
//
// A mutex rather than an atomic pointer: acquiring must read the current
// generation and count the call on it in one step, or a swap between the
// two could close the generation a call is about to use. The critical
// section is a few instructions beside a guest call of milliseconds.
type handle struct {
	mu      sync.Mutex
	cur     *generation
	closing sync.WaitGroup
	log     *slog.Logger
}

// acquire returns the current generation, counted as in use until release.
func (h *handle) acquire() *generation {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur.refs++
	return h.cur
}

// current returns the current generation for reading its settings, without
// holding it: its guest must not be called.
func (h *handle) current() *generation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// release ends one use of g, closing g if it was retired and this was its
// last use.
func (h *handle) release(g *generation) {
	h.mu.Lock()
	g.refs--
	last := g.retired && g.refs == 0
	h.mu.Unlock()
	if last {
		h.close(g)
	}
}

// swap makes next current and retires the generation it replaces; it
// returns the retired one's number.
func (h *handle) swap(next *generation) uint64 {
	h.mu.Lock()
	old := h.cur
	if next.n == 0 {
		next.n = old.n + 1
	}
	h.cur = next
	old.retired = true
	idle := old.refs == 0
	h.mu.Unlock()
	if idle {
		h.close(old)
	}
	return old.n
}

// retire retires the current generation for good (the controller is being
// removed): it is closed when its last reconcile ends.
func (h *handle) retire() {
	h.mu.Lock()
	g := h.cur
	already := g.retired
	g.retired = true
	idle := g.refs == 0
	h.mu.Unlock()
	if idle && !already {
		h.close(g)
	}
}

// closeAll retires the current generation and waits, until ctx ends, for
// it and every generation retired before it to be closed.
func (h *handle) closeAll(ctx context.Context, name string) error {
	h.retire()
	done := make(chan struct{})
	go func() { h.closing.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close module %q: %w", name, ctx.Err())
	}
}

// closeTimeout bounds the close of a retired module. No call holds it by
// then, so the bound only matters if the runtime itself hangs.
const closeTimeout = 10 * time.Second

// close closes g's guest in the background: release runs on a worker,
// which should go on to its next key.
func (h *handle) close(g *generation) {
	h.closing.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := g.mod.Runtime.Close(ctx); err != nil {
			h.log.Warn("close retired module", "generation", g.n, "err", err)
		}
	})
}

// newGeneration builds the generation of mod.
func newGeneration(mod Module, deps Deps) *generation {
	if mod.Selector == nil {
		mod.Selector = labels.Everything()
	}
	man := mod.Runtime.Manifest()
	if mod.Allowed != nil {
		man.Capabilities = mod.Allowed
	}
	if d, ok := mod.Subject.(*snapshot.Declaration); ok {
		// The executor checks a declared module's actions against its
		// declaration as the API server resolved it.
		man.Watches = d.Watches()
	}
	return &generation{
		n:        mod.Generation,
		mod:      mod,
		manifest: man,
		exec: &actions.Executor{
			Cluster: deps.Cluster,
			Volumes: deps.Volumes,
			Module:  mod.Name,
			Shadow:  mod.Shadow,
			Logger:  deps.Logger,
		},
	}
}
