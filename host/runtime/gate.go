package runtime

import (
	"container/list"
	"context"
	"sync"
)

// A guest runs on its goroutine until it returns, its deadline passes or a
// checkpoint yields: CPU-bound by design, and a host may run dozens of
// modules with several workers each. Run all at once, calls beyond the
// cores share them: each call's deadline (wall time) buys less CPU the more
// run beside it, so well-behaved modules time out beside busy ones, and the
// host's own goroutines (the webhook's handlers, the probes, /metrics,
// informers, the Lease renewal) queue behind every runnable guest. So the
// Engine runs at most Options.GuestCalls calls into guests at once, and a
// call waits for a slot before its instance is made or called; its deadline
// starts once it has one (instance.call).
//
// Two classes wait apart, each hook form's in its own (formSpec.class): a
// call of an admission hook, which the API server is waiting for under its
// webhook timeout, is given the next free slot before any waiting
// reconcile, which is queued and retried anyway. Within a class, calls are
// served in the order they came.

// callClass orders waiting calls: lower first.
type callClass int

const (
	classAdmit callClass = iota
	classReconcile
	numClasses
)

// gate holds the Engine's guest call slots.
type gate struct {
	mu      sync.Mutex
	free    int
	size    int
	waiting [numClasses]list.List // of chan struct{}, closed when granted
}

func newGate(size int) *gate { return &gate{free: size, size: size} }

// acquire waits for a slot, or for ctx to be done (its error then).
func (g *gate) acquire(ctx context.Context, c callClass) error {
	g.mu.Lock()
	if g.free > 0 && g.queuedAhead(c) == 0 {
		g.free--
		g.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	elem := g.waiting[c].PushBack(ready)
	g.mu.Unlock()

	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		select {
		case <-ready:
			// Granted as ctx ended: hand the slot on.
			g.mu.Unlock()
			g.release()
		default:
			g.waiting[c].Remove(elem)
			g.mu.Unlock()
		}
		return ctx.Err()
	}
}

// queuedAhead counts the calls that wait and would be served before one of
// class c. Call with mu held.
func (g *gate) queuedAhead(c callClass) int {
	n := 0
	for k := range c + 1 {
		n += g.waiting[k].Len()
	}
	return n
}

// release gives the slot to the first waiting call of the lowest class, or
// frees it.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range numClasses {
		if front := g.waiting[k].Front(); front != nil {
			g.waiting[k].Remove(front)
			close(front.Value.(chan struct{}))
			return
		}
	}
	g.free++
}

// GateStats says how the Engine's guest call slots are used.
type GateStats struct {
	// Slots is Options.GuestCalls; Running, how many are held.
	Slots, Running int
	// Waiting counts the calls waiting for a slot.
	Waiting int
}

func (g *gate) stats() GateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return GateStats{Slots: g.size, Running: g.size - g.free, Waiting: g.queuedAhead(numClasses - 1)}
}
