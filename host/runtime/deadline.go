package runtime

import (
	"context"
	"sync/atomic"
	"time"
)

// callContext is the context of the calls into one instance. It exists
// because the hot path should not pay for context.WithTimeout on every call
// (a timer and a context allocated, then torn down): each instance keeps one
// callContext and one stopped timer, and a call only resets the timer.
//
// Once it fires it stays done: the guest's next checkpoint (checkpoint.go)
// ends the call, and an instance whose call was ended is discarded, so its
// callContext is never used again.
type callContext struct {
	// parent is the caller's context; Value delegates to it. Set by start and
	// read only by the calling goroutine.
	parent   context.Context
	deadline time.Time

	done     chan struct{}
	fired    atomic.Bool
	cause    error // written once before done is closed
	byParent bool  // likewise: the caller's context ended, not the deadline

	timer      *time.Timer
	stopParent func() bool

	// log is the call's log budget (log.go), reset by start. Host functions
	// find it through their context, which is this one.
	log logBudget
	// host is the call's host-work budget (hostcall.go), reset by start.
	host hostBudget
}

var _ context.Context = (*callContext)(nil)

func newCallContext() *callContext {
	c := &callContext{parent: context.Background(), done: make(chan struct{})}
	c.timer = time.AfterFunc(time.Hour, func() { c.interrupt(context.DeadlineExceeded, false) })
	c.timer.Stop()
	return c
}

// start arms the context for one call of at most d.
func (c *callContext) start(parent context.Context, d time.Duration) context.Context {
	c.parent = parent
	c.deadline = time.Now().Add(d)
	c.log.reset()
	c.host.reset()
	if parent.Done() != nil {
		c.stopParent = context.AfterFunc(parent, func() { c.interrupt(parent.Err(), true) })
	}
	c.timer.Reset(d)
	return c
}

// finish disarms the context after a call. It reports whether the context
// fired (or is firing) during the call; if so the instance must be discarded.
func (c *callContext) finish() bool {
	fired := !c.timer.Stop()
	if c.stopParent != nil {
		if !c.stopParent() {
			fired = true
		}
		c.stopParent = nil
	}
	c.parent = context.Background()
	return fired || c.fired.Load()
}

// interrupt ends the call in flight with cause.
func (c *callContext) interrupt(cause error, byParent bool) {
	if c.fired.CompareAndSwap(false, true) {
		c.cause, c.byParent = cause, byParent
		close(c.done)
	}
}

// interrupted returns why the context fired, after finish reported it did,
// as the error of the call it ended. It waits for the firing to complete,
// which is immediate unless the context fired just as the call returned.
func (c *callContext) interrupted(d time.Duration) *interruptedError {
	<-c.done
	return &interruptedError{after: d, byParent: c.byParent, cause: c.cause}
}

func (c *callContext) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *callContext) Done() <-chan struct{}       { return c.done }

// Value answers callKey with c itself, so that host functions find the
// call under contexts layered over it (callOf), and delegates the rest.
func (c *callContext) Value(key any) any {
	if _, ok := key.(callKey); ok {
		return c
	}
	return c.parent.Value(key)
}

func (c *callContext) Err() error {
	select {
	case <-c.done:
		return c.cause
	default:
		return nil
	}
}
