package controller_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/metrics"
)

// fakeGuest is a module whose answer is a Go function.
type fakeGuest struct {
	caps      []abi.Capability
	version   string
	reconcile func(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error)
}

func (g *fakeGuest) Manifest() abi.Manifest {
	return abi.Manifest{Name: "fake", Version: g.version, Subject: abi.SubjectStatefulSet, Capabilities: g.caps}
}

func (g *fakeGuest) Admit(context.Context, *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	return nil, abi.ErrNoHook
}

func (g *fakeGuest) Reconcile(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	return g.reconcile(ctx, req)
}

func (g *fakeGuest) Close(context.Context) error { return nil }

var setEvents = abi.Capability{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}

// eventOn returns a Warning event action on the request's StatefulSet.
func eventOn(req *abi.ReconcileRequest) abi.Action {
	s := req.StatefulSet.Set.Metadata
	return abi.Action{
		Type:   abi.ActionEvent,
		Target: abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: s.Namespace, Name: s.Name, UID: s.UID},
		Event:  &abi.Event{Type: abi.EventWarning, Reason: "Fake", Message: "fake"},
	}
}

func TestReconcileRecoversPanic(t *testing.T) {
	c := newCluster(t, set("default", "web", nil))
	m := metrics.New()
	g := &fakeGuest{reconcile: func(context.Context, *abi.ReconcileRequest) (*abi.Result, error) {
		panic("boom")
	}}
	ctrl := controller.New(controller.Module{Runtime: g, Name: "fake"}, controller.Deps{Lister: c, Cluster: c, Metrics: m})

	out := ctrl.Reconcile(context.Background(), "default/web")
	require.ErrorIs(t, out.Err, controller.ErrPanic)
	require.ErrorContains(t, out.Err, "boom")
	require.True(t, out.Retry, "a panic is retried with backoff")
	require.Equal(t, 1.0, testutil.ToFloat64(m.Panics.WithLabelValues("fake")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Reconciles.WithLabelValues("fake", "error")))
}

// TestRunRequeuesAfterPanic: a worker whose reconcile panics keeps running,
// and the key comes back, after the queue's backoff, to a reconcile that
// succeeds.
func TestRunRequeuesAfterPanic(t *testing.T) {
	c := newCluster(t, set("default", "web", nil))
	calls := make(chan int, 10)
	n := 0
	g := &fakeGuest{caps: []abi.Capability{setEvents}, reconcile: func(_ context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
		n++
		calls <- n
		if n == 1 {
			panic("first call panics")
		}
		return &abi.Result{Actions: []abi.Action{eventOn(req)}}, nil
	}}
	ctrl := controller.New(controller.Module{Runtime: g, Name: "fake", Workers: 1}, controller.Deps{Lister: c, Cluster: c})
	ctrl.Enqueue("default/web")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctrl.Run(ctx) }()
	for want := 1; want <= 2; want++ {
		select {
		case got := <-calls:
			require.Equal(t, want, got)
		case <-time.After(testTimeout):
			t.Fatalf("call %d never came", want)
		}
	}
	require.Eventually(t, func() bool { return len(c.Events()) == 1 }, testTimeout, pollEvery, "the retried reconcile's event")
	cancel()
	<-done
}

func TestRequeueDelaysAreClamped(t *testing.T) {
	for _, tc := range []struct {
		name string
		ms   int64
		want time.Duration
	}{
		{"1ms gets the lower bound", 1, controller.MinRequeue},
		{"2^62 ms gets the upper bound", 1 << 62, controller.MaxRequeue},
		{"in range is kept", 90_000, 90 * time.Second},
		{"the upper bound itself", controller.MaxRequeue.Milliseconds(), controller.MaxRequeue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, set("default", "web", nil))
			g := &fakeGuest{reconcile: func(context.Context, *abi.ReconcileRequest) (*abi.Result, error) {
				return &abi.Result{RequeueAfterMillis: tc.ms}, nil
			}}
			ctrl := controller.New(controller.Module{Runtime: g, Name: "fake"}, controller.Deps{Lister: c, Cluster: c})
			out := ctrl.Reconcile(context.Background(), "default/web")
			require.NoError(t, out.Err)
			require.Equal(t, "requeue", out.Result)
			require.Equal(t, tc.want, out.RequeueAfter)
		})
	}
}

// TestActionLabelsAreFixed: action types the host does not know, however
// many and however encoded, are counted under one label, and neither mint
// series nor panic in client_golang.
func TestActionLabelsAreFixed(t *testing.T) {
	c := newCluster(t, set("default", "web", nil))
	m := metrics.New()
	types := []string{"bogus-1", "bogus-2", "\xff\xfe", abi.ActionEvent}
	i := 0
	g := &fakeGuest{caps: []abi.Capability{setEvents}, version: "1.0\xff", reconcile: func(_ context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
		a := eventOn(req)
		a.Type = types[i%len(types)]
		i++
		return &abi.Result{Actions: []abi.Action{a}}, nil
	}}
	ctrl := controller.New(controller.Module{Runtime: g, Name: "fake"}, controller.Deps{Lister: c, Cluster: c, Metrics: m})
	before := testutil.CollectAndCount(m.Actions)
	for range types {
		out := ctrl.Reconcile(context.Background(), "default/web")
		require.NotErrorIs(t, out.Err, controller.ErrPanic)
	}
	require.Equal(t, 3.0, testutil.ToFloat64(m.Actions.WithLabelValues("fake", controller.UnknownAction, string(actions.Refused))))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Actions.WithLabelValues("fake", abi.ActionEvent, string(actions.Executed))))
	require.Equal(t, before+1, testutil.CollectAndCount(m.Actions), "one new series, unknown/refused")
	require.Equal(t, 0.0, testutil.ToFloat64(m.Panics.WithLabelValues("fake")))
}

// TestAllowedNarrowsTheManifest: the executor grants the capabilities the
// controller is given, not those the module's manifest declares.
func TestAllowedNarrowsTheManifest(t *testing.T) {
	c := newCluster(t, set("default", "web", nil))
	g := &fakeGuest{caps: []abi.Capability{setEvents}, reconcile: func(_ context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
		return &abi.Result{Actions: []abi.Action{eventOn(req)}}, nil
	}}
	for _, tc := range []struct {
		name    string
		allowed []abi.Capability
		refused bool
	}{
		{"nil takes the manifest's", nil, false},
		{"granted", []abi.Capability{setEvents}, false},
		{"granted nothing", []abi.Capability{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctrl := controller.New(controller.Module{Runtime: g, Name: "fake", Allowed: tc.allowed}, controller.Deps{Lister: c, Cluster: c})
			out := ctrl.Reconcile(context.Background(), "default/web")
			if tc.refused {
				require.ErrorIs(t, out.Err, actions.ErrRefused)
				return
			}
			require.NoError(t, out.Err)
		})
	}
}

// TestReconcileIsBounded: a reconcile ends at ReconcileTimeout, and at once
// when the leadership its writes rely on ends.
func TestReconcileIsBounded(t *testing.T) {
	blocked := func(ctx context.Context, _ *abi.ReconcileRequest) (*abi.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	t.Run("timeout", func(t *testing.T) {
		c := newCluster(t, set("default", "web", nil))
		errs := make(chan error, 1)
		g := &fakeGuest{reconcile: func(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
			_, err := blocked(ctx, req)
			errs <- err
			return nil, err
		}}
		ctrl := controller.New(controller.Module{Runtime: g, Name: "fake", Workers: 1},
			controller.Deps{Lister: c, Cluster: c, ReconcileTimeout: time.Millisecond})
		ctrl.Enqueue("default/web")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); ctrl.Run(ctx) }()
		select {
		case err := <-errs:
			require.ErrorIs(t, err, context.DeadlineExceeded)
		case <-time.After(testTimeout):
			t.Fatal("the reconcile outlived its timeout")
		}
		cancel()
		<-done
	})
	t.Run("lost leadership", func(t *testing.T) {
		c := newCluster(t, set("default", "web", nil))
		entered, errs := make(chan struct{}), make(chan error, 1)
		g := &fakeGuest{reconcile: func(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
			close(entered)
			_, err := blocked(ctx, req)
			errs <- err
			return nil, err
		}}
		ctrl := controller.New(controller.Module{Runtime: g, Name: "fake", Workers: 1}, controller.Deps{Lister: c, Cluster: c})
		ctrl.Enqueue("default/web")
		ctx, cancel := context.WithCancel(context.Background())
		writes, lose := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); ctrl.RunWhile(ctx, writes) }()
		<-entered
		lose()
		select {
		case err := <-errs:
			require.True(t, errors.Is(err, context.Canceled), "got %v", err)
		case <-time.After(testTimeout):
			t.Fatal("the reconcile went on after the leadership ended")
		}
		cancel()
		<-done
	})
}
