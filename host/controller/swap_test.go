package controller_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// versionGuest answers every reconcile with a requeue of version seconds,
// so that an outcome says which module answered it, and checks that it is
// never called once closed nor closed under a call.
type versionGuest struct {
	version  int
	inFlight atomic.Int32
	closed   atomic.Bool
	closes   atomic.Int32
	problems chan<- string
}

func (g *versionGuest) Manifest() abi.Manifest {
	return abi.Manifest{Name: "v", Version: fmt.Sprint(g.version), Subject: abi.SubjectStatefulSet}
}

func (g *versionGuest) Reconcile(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	if g.closed.Load() {
		g.problems <- fmt.Sprintf("version %d called after Close", g.version)
	}
	time.Sleep(50 * time.Microsecond) // long enough for swaps to land mid-call
	return &abi.Result{RequeueAfterMillis: int64(g.version) * 1000}, nil
}

func (g *versionGuest) Admit(context.Context, *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	return nil, abi.ErrNoHook
}

func (g *versionGuest) Close(context.Context) error {
	if n := g.inFlight.Load(); n != 0 {
		g.problems <- fmt.Sprintf("version %d closed under %d calls", g.version, n)
	}
	g.closed.Store(true)
	g.closes.Add(1)
	return nil
}

// TestSwapUnderLoad hammers a controller with reconciles from several
// goroutines while its module is swapped 200 times: no reconcile fails,
// every reconcile that starts after a Swap returned is answered by that
// module or a later one, and every module swapped out is closed exactly
// once, after its last call.
func TestSwapUnderLoad(t *testing.T) {
	c := newCluster(t, set("default", "web", nil))
	problems := make(chan string, 100)
	const swaps = 200
	guests := make([]*versionGuest, swaps+1)
	for i := range guests {
		guests[i] = &versionGuest{version: i + 1, problems: problems}
	}
	mod := func(g *versionGuest) controller.Module {
		return controller.Module{Runtime: g, Name: "v", Allowed: []abi.Capability{}}
	}
	ctrl := controller.New(mod(guests[0]), controller.Deps{Lister: c, Cluster: c})

	var latest atomic.Int64 // the version whose Swap has returned
	latest.Store(1)
	stop := make(chan struct{})
	var calls atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				atLeast := latest.Load()
				out := ctrl.Reconcile(context.Background(), "default/web")
				calls.Add(1)
				if out.Err != nil {
					problems <- fmt.Sprintf("reconcile failed: %v", out.Err)
					continue
				}
				if got := int64(out.RequeueAfter / time.Second); got < atLeast {
					problems <- fmt.Sprintf("reconcile started after version %d was swapped in was answered by version %d", atLeast, got)
				}
			}
		})
	}
	for i := 1; i <= swaps; i++ {
		n, err := ctrl.Swap(mod(guests[i]))
		require.NoError(t, err)
		require.Equal(t, uint64(i+1), n)
		latest.Store(int64(i + 1))
		time.Sleep(100 * time.Microsecond)
	}
	close(stop)
	wg.Wait()
	require.NoError(t, ctrl.Close(context.Background()))
	close(problems)
	for p := range problems {
		t.Error(p)
	}
	require.Greater(t, calls.Load(), int64(swaps), "the calls overlapped the swaps")
	for _, g := range guests {
		require.Equal(t, int32(1), g.closes.Load(), "version %d closed once", g.version)
	}
	require.Equal(t, uint64(swaps+1), ctrl.Generation())
}

// TestSwapRefusesAnotherSubject: a module of another subject is another
// controller's, and the one serving stays.
func TestSwapRefusesAnotherSubject(t *testing.T) {
	c := newCluster(t, set("default", "web", nil))
	ctrl := controller.New(controller.Module{Runtime: &fakeGuest{}, Name: "fake"}, controller.Deps{Lister: c, Cluster: c})
	pv := &volumeGuest{}
	_, err := ctrl.Swap(controller.Module{Runtime: pv, Name: "fake"})
	require.ErrorIs(t, err, controller.ErrSwap)
	require.ErrorContains(t, err, `its subject is "persistentvolume"`)
	_, err = ctrl.Swap(controller.Module{Runtime: &fakeGuest{}, Name: "other"})
	require.ErrorIs(t, err, controller.ErrSwap)
	require.Equal(t, uint64(1), ctrl.Generation())
}

type volumeGuest struct{ fakeGuest }

func (*volumeGuest) Manifest() abi.Manifest {
	return abi.Manifest{Name: "fake", Subject: abi.SubjectPersistentVolume}
}

// TestSwapRealModules swaps instances of one compiled wasm module loaded
// from the same bytes while reconciles run through them: closing one must
// leave the others serving (wazero#2336, fixed in v1.10.1), and no
// reconcile meets a closed module.
func TestSwapRealModules(t *testing.T) {
	c := newCluster(t, set("default", "web", nil))
	first := warnretain(t)
	// One engine, so that every load after the first takes the compiled
	// code from its cache, as a swap back to a version already seen does.
	e, err := runtime.NewEngine(context.Background(), runtime.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	ctrl := controller.New(controller.Module{Runtime: first, Name: "warn"}, controller.Deps{Lister: c, Cluster: c})
	stop := make(chan struct{})
	errs := make(chan error, 100)
	var calls atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if out := ctrl.Reconcile(context.Background(), "default/web"); out.Err != nil {
					errs <- out.Err
				}
				calls.Add(1)
			}
		})
	}
	for range 10 {
		m, err := e.Load(context.Background(), "warnretain.wasm", wasm, runtime.Limits{})
		require.NoError(t, err)
		_, err = ctrl.Swap(controller.Module{Runtime: m, Name: "warn"})
		require.NoError(t, err)
		before := calls.Load()
		require.Eventually(t, func() bool { return calls.Load() > before+2 }, testTimeout, time.Millisecond)
	}
	close(stop)
	wg.Wait()
	require.NoError(t, ctrl.Close(context.Background()))
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	_, err = first.Reconcile(context.Background(), &abi.ReconcileRequest{Key: "default/web"})
	require.Error(t, err, "the first module was closed once swapped out")
}
