package admission

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"
)

// The webhook server bounds the memory of all reviews in flight together,
// not each review alone: a patch within every bound of one review, times
// the 256 connections the server takes, is gigabytes. A review is charged
// for each thing it will hold before it holds it, against one budget
// (ServerLimits.MaxInFlightBytes):
//
//   - its body, by its Content-Length, before a byte is read (bounded);
//   - what the body decodes to, from one pass over it (scanReview):
//     decodeCost of its bytes and values, before it is decoded;
//   - the module's input, from its encoded size, before the call;
//   - the module's patch, its application and the answer, from the
//     object's and the patch's sizes (patchCost), before it is applied.
//
// A charge that does not fit is refused at once, never waited for: the API
// server is waiting, and it answers by the webhook's failure policy (a 429
// for the body and its decoding, the failure policy's answer from the
// host after that).
//
// A review's charge is given back only when everything it paid for has
// ended: when the handler has answered and the review's goroutine, which
// goes on past the answer's deadline until the runtime ends the call and
// the patch's bounded work is done, has returned too.

// memory is the server's budget of bytes for reviews in flight.
type memory struct {
	sem   *semaphore.Weighted
	limit int64
}

func newMemory(limit int64) *memory {
	return &memory{sem: semaphore.NewWeighted(limit), limit: limit}
}

// charge is what one review holds of the budget. Its methods are safe for
// concurrent use; a nil charge bounds nothing (a review outside the webhook
// server: kubeplug test).
type charge struct {
	mem  *memory
	mu   sync.Mutex
	held int64
	refs int // the handler, and the review's goroutine while it runs
}

// errBudget is why a charge was refused: the budget is held by other
// reviews (full), or the charge alone is more than the budget (never).
type errBudget struct {
	what      string
	n, limit  int64
	neverFits bool
}

func (e *errBudget) Error() string {
	if e.neverFits {
		return fmt.Sprintf("%s needs %d bytes of the webhook server's memory, more than its whole limit of %d bytes for reviews in flight", e.what, e.n, e.limit)
	}
	return fmt.Sprintf("the webhook server holds its limit of %d bytes for reviews in flight; %s needs %d more", e.limit, e.what, e.n)
}

// grow charges n more bytes for what (named in the error), or refuses them.
func (c *charge) grow(n int64, what string) error {
	if c == nil || n <= 0 {
		return nil
	}
	if n > c.mem.limit {
		return &errBudget{what: what, n: n, limit: c.mem.limit, neverFits: true}
	}
	if !c.mem.sem.TryAcquire(n) {
		return &errBudget{what: what, n: n, limit: c.mem.limit}
	}
	c.mu.Lock()
	c.held += n
	c.mu.Unlock()
	return nil
}

// retain adds a holder: the review's goroutine, before it starts.
func (c *charge) retain() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.refs++
	c.mu.Unlock()
}

// release removes a holder; the last one gives the bytes back.
func (c *charge) release() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.refs--
	var n int64
	if c.refs == 0 {
		n, c.held = c.held, 0
	}
	c.mu.Unlock()
	if n > 0 {
		c.mem.sem.Release(n)
	}
}

type chargeKey struct{}

func withCharge(ctx context.Context, c *charge) context.Context {
	return context.WithValue(ctx, chargeKey{}, c)
}

// chargeOf is the review's charge in ctx, nil when it has none.
func chargeOf(ctx context.Context) *charge {
	c, _ := ctx.Value(chargeKey{}).(*charge)
	return c
}
