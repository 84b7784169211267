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

// hold takes n seats of class c at g, failing the test if one waits.
func hold(t *testing.T, g *gate, c callClass, n int) {
	t.Helper()
	for range n {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		err := g.acquire(ctx, c)
		cancel()
		if err != nil {
			t.Fatalf("a %s call had to wait for a seat: %+v", c, g.stats())
		}
	}
}

// notYet fails the test if any of chans is closed.
func notYet(t *testing.T, what string, chans ...chan struct{}) {
	t.Helper()
	for i, ch := range chans {
		select {
		case <-ch:
			t.Fatalf("%s: waiter %d was granted a seat", what, i+1)
		default:
		}
	}
}

// Whatever one class holds, the other has a seat: admission calls that
// fill their share do not stop reconciles, and reconciles with long
// deadlines do not make admission calls wait.
func TestGateKeepsASeatForEachClass(t *testing.T) {
	for _, tc := range []struct {
		perClass, reserve int
	}{{1, 1}, {2, 1}, {4, 1}, {8, 2}} {
		for _, busy := range []callClass{classAdmit, classReconcile} {
			other := classReconcile
			if busy == classReconcile {
				other = classAdmit
			}
			g := newGate(tc.perClass)
			hold(t, g, busy, tc.perClass)
			more, _ := waiter(g, t.Context(), busy)
			queued(g, 1)
			notYet(t, "a class beyond its share", more)
			hold(t, g, other, tc.reserve) // at once
			if s := g.stats(); s.Slots != tc.perClass+tc.reserve || s.Running != tc.perClass+tc.reserve {
				t.Fatalf("%d per class: %+v, want %d seats, all held", tc.perClass, s, tc.perClass+tc.reserve)
			}
			g.release(busy)
			<-more
		}
	}
}

// A freed seat goes to the first waiting call its class may take,
// admission calls first; within a class, in the order they came.
func TestGateServesAdmissionFirstThenInOrder(t *testing.T) {
	g := newGate(2) // 3 seats, 2 per class
	hold(t, g, classReconcile, 2)
	hold(t, g, classAdmit, 1)
	r1, _ := waiter(g, t.Context(), classReconcile)
	queued(g, 1)
	a1, _ := waiter(g, t.Context(), classAdmit)
	queued(g, 2)
	r2, _ := waiter(g, t.Context(), classReconcile)
	queued(g, 3)

	g.release(classReconcile) // the admission may take it, and comes first
	<-a1
	notYet(t, "after the first release", r1, r2)
	g.release(classAdmit)
	<-r1
	notYet(t, "after the second release", r2)
	g.release(classReconcile)
	<-r2
	if s := g.stats(); s.Running != 3 || s.Waiting != 0 || s.Classes[classReconcile].Running != 2 {
		t.Fatalf("after the hand-overs: %+v, want 2 reconciles and an admission running, none waiting", s)
	}
}

func TestGateNewCallQueuesBehindWaiters(t *testing.T) {
	g := newGate(1)
	hold(t, g, classAdmit, 1)
	a, _ := waiter(g, t.Context(), classAdmit)
	queued(g, 1)
	// The seat is handed to the waiting admission, not freed for the next
	// admission to take past it.
	g.release(classAdmit)
	<-a
	late, _ := waiter(g, t.Context(), classAdmit)
	queued(g, 1)
	notYet(t, "a late call", late)
	g.release(classAdmit)
	<-late
}

func TestGateWaiterGivesUp(t *testing.T) {
	g := newGate(1)
	hold(t, g, classReconcile, 1)
	ctx, cancel := context.WithCancel(t.Context())
	_, failed := waiter(g, ctx, classReconcile)
	queued(g, 1)
	cancel()
	if err := <-failed; !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire after cancel: %v, want context.Canceled", err)
	}
	s := g.stats()
	if s.Waiting != 0 || s.Running != 1 {
		t.Fatalf("after the waiter gave up: %+v, want it gone from the queue", s)
	}
	if got := s.Classes[classReconcile].GaveUp; got != 1 {
		t.Fatalf("calls that gave up waiting: %d, want 1 counted", got)
	}
	// The seat it did not take is free once released.
	g.release(classReconcile)
	hold(t, g, classReconcile, 1)
}

// fakeInst is a poolable that counts its closes.
type fakeInst struct{ closed *int }

func (f *fakeInst) close() { *f.closed++ }

// A call that panics (the controller and net/http recover it) gives back
// its pool slot and its guest call seat, and its instance is discarded.
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
			t.Fatalf("after a panic in %s: %+v, want the guest call seat free", where, s)
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
