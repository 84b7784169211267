package runtime

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// A guest runs on its goroutine until it returns, its deadline passes or a
// checkpoint yields: CPU-bound by design, and a host may run dozens of
// modules with several workers each. Run all at once, calls beyond the
// cores share them: each call's deadline (wall time) buys less CPU the more
// run beside it, so well-behaved modules time out beside busy ones, and the
// host's own goroutines (the webhook's handlers, the probes, /metrics,
// informers, the Lease renewal) queue behind every runnable guest. So the
// Engine runs a bounded number of calls into guests at once, and a call
// waits for a seat before its instance is made or called; its deadline
// starts once it has one (instance.call).
//
// Calls come in two classes, each hook form's in its own (formSpec.class):
// admission calls, which the API server waits for under its webhook
// timeout, and reconciles, which are queued and retried anyway. A call
// cannot be stopped before its deadline to make room, so a class that took
// every seat would hold the other off for a whole deadline: reconciles with
// a 10 s timeout would fail every admission behind them, and a flood of
// admissions would stop every reconcile. So, as kube-apiserver's API
// Priority and Fairness gives each priority level seats of its own, each
// class may hold at most Options.GuestCalls seats (one per core by
// default) and the gate has reserved more seats than that, one for every
// four (at least one): whatever one class holds, the other always has its
// reserved seats. A class alone runs as many calls as before; both at once
// may run GuestCalls plus the reserve, a quarter more calls than cores,
// which the guests' deadlines and checkpoints make short.
//
// A freed seat goes to the first waiting admission call its class may
// still take, else to the first waiting reconcile: within a class, calls
// are served in the order they came. A waiting call gives up when its
// caller's context ends (the review's deadline, the reconcile's timeout),
// which is as long as its caller can afford to wait; each class's calls
// that gave up are counted (GateStats), the sign of a starved class.

// callClass orders waiting calls: lower first.
type callClass int

const (
	classAdmit callClass = iota
	classReconcile
	numClasses
)

// String names the class in metrics: admit or reconcile.
func (c callClass) String() string {
	if c == classAdmit {
		return "admit"
	}
	return "reconcile"
}

// gate holds the Engine's guest call seats.
type gate struct {
	mu       sync.Mutex
	perClass int // the most seats one class may hold
	size     int // perClass and the reserve
	running  [numClasses]int
	waiting  [numClasses]list.List // of chan struct{}, closed when granted
	// What has happened so far, for metrics.
	waited [numClasses]time.Duration // by calls that got a seat after waiting
	gaveUp [numClasses]int64         // calls that gave up waiting
}

// newGate returns a gate where each class may hold perClass seats, with
// reserveFor(perClass) more so that neither can hold them all.
func newGate(perClass int) *gate {
	return &gate{perClass: perClass, size: perClass + reserveFor(perClass)}
}

// reserveFor is how many seats more than one class may hold the gate has:
// one for every four, at least one.
func reserveFor(perClass int) int { return max(1, perClass/4) }

// acquire waits for a seat for a call of class c, or for ctx to be done
// (its error then).
func (g *gate) acquire(ctx context.Context, c callClass) error {
	g.mu.Lock()
	if g.waiting[c].Len() == 0 && g.mayRun(c) {
		g.running[c]++
		g.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	elem := g.waiting[c].PushBack(ready)
	g.mu.Unlock()
	start := time.Now()

	select {
	case <-ready:
		g.mu.Lock()
		g.waited[c] += time.Since(start)
		g.mu.Unlock()
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		select {
		case <-ready:
			// Granted as ctx ended: hand the seat on.
			g.mu.Unlock()
			g.release(c)
		default:
			g.waiting[c].Remove(elem)
			g.gaveUp[c]++
			g.mu.Unlock()
		}
		return ctx.Err()
	}
}

// mayRun reports whether a call of class c may take a seat now. Call with
// mu held.
func (g *gate) mayRun(c callClass) bool {
	held := 0
	for _, n := range g.running {
		held += n
	}
	return held < g.size && g.running[c] < g.perClass
}

// release gives back a seat of class c, and hands seats to the first
// waiting calls that may take them, admission calls first.
func (g *gate) release(c callClass) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running[c]--
	for k := range numClasses {
		for g.waiting[k].Len() > 0 && g.mayRun(k) {
			front := g.waiting[k].Front()
			g.waiting[k].Remove(front)
			g.running[k]++
			close(front.Value.(chan struct{}))
		}
	}
}

// GateStats says how the Engine's guest call seats are used.
type GateStats struct {
	// PerClass is Options.GuestCalls, the most seats one class may hold;
	// Slots, every seat, the reserve included.
	PerClass, Slots int
	// Running and Waiting count calls, in all; Classes, by class.
	Running, Waiting int
	Classes          []ClassStats
}

// ClassStats is one class of calls at the gate.
type ClassStats struct {
	// Class is admit or reconcile.
	Class            string
	Running, Waiting int
	// Waited is the time calls waited for the seat they got, in all;
	// GaveUp counts the calls that waited until their caller gave up.
	Waited time.Duration
	GaveUp int64
}

func (g *gate) stats() GateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := GateStats{PerClass: g.perClass, Slots: g.size}
	for c := range numClasses {
		cs := ClassStats{Class: c.String(), Running: g.running[c], Waiting: g.waiting[c].Len(), Waited: g.waited[c], GaveUp: g.gaveUp[c]}
		s.Running += cs.Running
		s.Waiting += cs.Waiting
		s.Classes = append(s.Classes, cs)
	}
	return s
}
