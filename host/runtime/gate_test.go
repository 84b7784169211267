package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// waiter starts acquire(c) and returns a channel closed once it has the
// slot, and one for its error.
func waiter(g *gate, ctx context.Context, c callClass) (granted chan struct{}, failed chan error) {
	granted, failed = make(chan struct{}), make(chan error, 1)
	go func() {
		if err := g.acquire(ctx, c); err != nil {
			failed <- err
			return
		}
		close(granted)
	}()
	return granted, failed
}

// queued waits until n calls wait at g (go test's -timeout bounds it).
func queued(g *gate, n int) {
	for g.stats().Waiting != n {
		time.Sleep(time.Millisecond)
	}
}

// heldGate returns a gate of one slot, held.
func heldGate(t *testing.T) *gate {
	t.Helper()
	g := newGate(1)
	if err := g.acquire(t.Context(), classReconcile); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGateServesAdmissionFirstThenInOrder(t *testing.T) {
	g := heldGate(t)
	r1, _ := waiter(g, t.Context(), classReconcile)
	queued(g, 1)
	a1, _ := waiter(g, t.Context(), classAdmit)
	queued(g, 2)
	r2, _ := waiter(g, t.Context(), classReconcile)
	queued(g, 3)

	for i, next := range []chan struct{}{a1, r1, r2} {
		g.release()
		<-next
		for j, other := range []chan struct{}{a1, r1, r2}[i+1:] {
			select {
			case <-other:
				t.Fatalf("release %d granted waiter %d too", i+1, i+2+j)
			default:
			}
		}
	}
	if s := g.stats(); s.Running != 1 || s.Waiting != 0 {
		t.Fatalf("after three hand-overs: %+v, want 1 running and none waiting", s)
	}
	g.release()
	if s := g.stats(); s.Running != 0 {
		t.Fatalf("after the last release: %+v, want none running", s)
	}
}

func TestGateNewCallQueuesBehindWaiters(t *testing.T) {
	g := heldGate(t)
	a, _ := waiter(g, t.Context(), classAdmit)
	queued(g, 1)
	// The slot is handed to the waiting admission, not freed for the next
	// reconcile to take past it.
	g.release()
	<-a
	r, _ := waiter(g, t.Context(), classReconcile)
	queued(g, 1)
	select {
	case <-r:
		t.Fatal("a reconcile took a slot the admission held")
	default:
	}
	g.release()
	<-r
}

func TestGateWaiterGivesUp(t *testing.T) {
	g := heldGate(t)
	ctx, cancel := context.WithCancel(t.Context())
	_, failed := waiter(g, ctx, classReconcile)
	queued(g, 1)
	cancel()
	if err := <-failed; !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire after cancel: %v, want context.Canceled", err)
	}
	if s := g.stats(); s.Waiting != 0 || s.Running != 1 {
		t.Fatalf("after the waiter gave up: %+v, want it gone from the queue", s)
	}
	// The slot it did not take is free once released.
	g.release()
	if err := g.acquire(t.Context(), classReconcile); err != nil {
		t.Fatal(err)
	}
}

// fakeInst is a poolable that counts its closes.
type fakeInst struct{ closed *int }

func (f *fakeInst) close() { *f.closed++ }

// A call that panics (the controller and net/http recover it) gives back
// its pool slot and its guest call slot, and its instance is discarded.
func TestInvokeOnPanicReleasesSlots(t *testing.T) {
	g := newGate(1)
	p := newPool[*fakeInst](1)
	closed := 0
	var interrupted atomic.Bool
	newInst := func(context.Context) (*fakeInst, ErrorKind, error) { return &fakeInst{closed: &closed}, 0, nil }
	for _, where := range []string{"call", "newInstance"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("%s: the panic did not reach the caller", where)
				}
			}()
			mk := newInst
			if where == "newInstance" {
				mk = func(context.Context) (*fakeInst, ErrorKind, error) { panic("in newInstance") }
			}
			_ = invokeOn(t.Context(), p, g, classReconcile, "m", "reconcile", "k", &interrupted, mk,
				func(*fakeInst) (ErrorKind, bool, error) { panic("in call") })
		}()
		if s := g.stats(); s.Running != 0 {
			t.Fatalf("after a panic in %s: %+v, want the guest call slot free", where, s)
		}
		if s := p.stats(); s.Busy != 0 {
			t.Fatalf("after a panic in %s: pool %+v, want its slot free", where, s)
		}
	}
	if closed != 1 {
		t.Fatalf("the instance of the call that panicked closed %d times, want once (discarded)", closed)
	}
	// Both slots serve the next call.
	if err := invokeOn(t.Context(), p, g, classReconcile, "m", "reconcile", "k", &interrupted, newInst,
		func(*fakeInst) (ErrorKind, bool, error) { return 0, true, nil }); err != nil {
		t.Fatal(err)
	}
}
