package runtime

import (
	"context"
	"sync"
	"sync/atomic"
)

// pool bounds and recycles a module's instances. A call holds a slot for its
// whole duration; an instance is created only when no idle one is left, so
// live instances never outnumber slots.
//
// T is the instance type, a pointer: a native module's *instance or an
// Extism plugin's *pluginInstance; its zero value (nil) is "no instance".
type pool[T poolable] struct {
	slots chan struct{} // one token per call in flight

	mu       sync.Mutex
	idle     []T
	closed   bool
	closedCh chan struct{}

	live, peak         atomic.Int64
	created, discarded atomic.Uint64
}

// poolable is an instance type a pool holds.
type poolable interface {
	comparable
	close()
}

func newPool[T poolable](size int) *pool[T] {
	return &pool[T]{slots: make(chan struct{}, size), closedCh: make(chan struct{})}
}

// acquire waits for a slot and returns an idle instance, or nil when the
// caller must create one (and then call added).
func (p *pool[T]) acquire(ctx context.Context) (inst T, err error) {
	select {
	case p.slots <- struct{}{}:
	default:
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return inst, ctx.Err()
		case <-p.closedCh:
			return inst, ErrClosed
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		<-p.slots
		return inst, ErrClosed
	}
	if n := len(p.idle); n > 0 {
		inst = p.idle[n-1]
		var none T
		p.idle[n-1] = none
		p.idle = p.idle[:n-1]
	}
	return inst, nil
}

// added counts an instance the holder of a slot created.
func (p *pool[T]) added() {
	p.created.Add(1)
	live := p.live.Add(1)
	for {
		peak := p.peak.Load()
		if live <= peak || p.peak.CompareAndSwap(peak, live) {
			return
		}
	}
}

// seed adds a first instance, created without a slot, to the idle list.
func (p *pool[T]) seed(inst T) {
	p.added()
	p.mu.Lock()
	p.idle = append(p.idle, inst)
	p.mu.Unlock()
}

// release gives back a slot, and inst (if not nil) to the idle list when keep
// is set, closing it otherwise.
func (p *pool[T]) release(inst T, keep bool) {
	var none T
	if inst != none {
		p.mu.Lock()
		keep = keep && !p.closed
		if keep {
			p.idle = append(p.idle, inst)
		}
		p.mu.Unlock()
		if !keep {
			p.discard(inst)
		}
	}
	<-p.slots
}

func (p *pool[T]) discard(inst T) {
	inst.close()
	p.live.Add(-1)
	p.discarded.Add(1)
}

// close refuses new calls, waits until ctx is done for the calls in flight to
// release their slots, and closes the idle instances. It reports whether all
// calls finished.
func (p *pool[T]) close(ctx context.Context) bool {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.closedCh)
	}
	p.mu.Unlock()

	held := 0
wait:
	for held < cap(p.slots) {
		select {
		case p.slots <- struct{}{}:
			held++
		case <-ctx.Done():
			break wait
		}
	}
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, inst := range idle {
		p.discard(inst)
	}
	for range held {
		<-p.slots
	}
	return held == cap(p.slots)
}

// Stats counts a module's instances.
type Stats struct {
	// Live is how many instances exist now, idle or busy.
	Live int
	// Busy is how many calls are in flight (or waiting for a new instance).
	Busy int
	// Peak is the most instances that existed at once.
	Peak int
	// Created and Discarded count instances since Load; Discarded counts
	// those closed after a failed call, and all of them once the module is
	// closed.
	Created   uint64
	Discarded uint64
}

func (p *pool[T]) stats() Stats {
	return Stats{
		Live:      int(p.live.Load()),
		Busy:      len(p.slots),
		Peak:      int(p.peak.Load()),
		Created:   p.created.Load(),
		Discarded: p.discarded.Load(),
	}
}

// plus adds o's counts to s's; Peak adds too, a bound on the peak of the sum.
func (s Stats) plus(o Stats) Stats {
	return Stats{
		Live:      s.Live + o.Live,
		Busy:      s.Busy + o.Busy,
		Peak:      s.Peak + o.Peak,
		Created:   s.Created + o.Created,
		Discarded: s.Discarded + o.Discarded,
	}
}
