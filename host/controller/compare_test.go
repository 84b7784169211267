package controller_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/metrics"
)

func finalizer(typ, claim, f string) abi.Action {
	return abi.Action{Type: typ, Target: abi.ObjectRef{Kind: abi.KindPersistentVolumeClaim, Namespace: "default", Name: claim, UID: "u-" + claim}, Finalizer: f}
}

func warning(reason, msg string) abi.Action {
	return abi.Action{Type: abi.ActionEvent, Target: abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: "default", Name: "web", UID: "u-web"},
		Event: &abi.Event{Type: abi.EventWarning, Reason: reason, Message: msg}}
}

func TestCompare(t *testing.T) {
	add, rm := abi.ActionAddFinalizer, abi.ActionRemoveFinalizer
	for _, tc := range []struct {
		name      string
		want, got abi.Result
		agree     bool
		diff      string
	}{
		{name: "both empty", agree: true},
		{name: "same actions, objects in another order",
			want:  abi.Result{Actions: []abi.Action{finalizer(add, "a", "f"), finalizer(add, "b", "f")}},
			got:   abi.Result{Actions: []abi.Action{finalizer(add, "b", "f"), finalizer(add, "a", "f")}},
			agree: true},
		{name: "another order on one object",
			want: abi.Result{Actions: []abi.Action{finalizer(add, "a", "f"), finalizer(rm, "a", "f")}},
			got:  abi.Result{Actions: []abi.Action{finalizer(rm, "a", "f"), finalizer(add, "a", "f")}},
			diff: "another order on one object"},
		{name: "an event worded otherwise",
			want:  abi.Result{Actions: []abi.Action{warning("Retained", "claims kept")}},
			got:   abi.Result{Actions: []abi.Action{warning("Retained", "the claims are kept")}},
			agree: true},
		{name: "an event for another reason",
			want: abi.Result{Actions: []abi.Action{warning("Retained", "x")}},
			got:  abi.Result{Actions: []abi.Action{warning("Other", "x")}},
			diff: "only in the shadow: event StatefulSet default/web"},
		{name: "another payload",
			want: abi.Result{Actions: []abi.Action{finalizer(add, "a", "f")}},
			got:  abi.Result{Actions: []abi.Action{finalizer(add, "a", "g")}},
			diff: "only in the module compared with: addFinalizer PersistentVolumeClaim default/a"},
		{name: "an action missing",
			want: abi.Result{Actions: []abi.Action{finalizer(add, "a", "f"), finalizer(add, "a", "f")}},
			got:  abi.Result{Actions: []abi.Action{finalizer(add, "a", "f")}},
			diff: "only in the module compared with"},
		{name: "requeue delays differ", want: abi.Result{RequeueAfterMillis: 1000}, got: abi.Result{RequeueAfterMillis: 5000}, agree: true},
		{name: "one requeues", want: abi.Result{RequeueAfterMillis: 1000}, diff: "requeue: after 1000ms vs none in the shadow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := controller.Compare(&tc.want, &tc.got)
			require.Equal(t, tc.agree, c.Agree, "diff: %v", c.Diff)
			if !tc.agree {
				require.Contains(t, strings.Join(c.Diff, "\n"), tc.diff)
			}
		})
	}
}

// TestCompareBoundsTheDiff: a shadow returning thousands of actions with
// huge payloads gets a diff of bounded size.
func TestCompareBoundsTheDiff(t *testing.T) {
	var many []abi.Action
	for range 1000 {
		many = append(many, finalizer(abi.ActionAddFinalizer, strings.Repeat("x", 200), strings.Repeat("\xff", 5000)))
	}
	c := controller.Compare(&abi.Result{}, &abi.Result{Actions: many})
	require.False(t, c.Agree)
	require.Len(t, c.Diff, 11)
	require.Equal(t, "and 990 more", c.Diff[10])
	for _, d := range c.Diff {
		require.LessOrEqual(t, len(d), 520)
	}
}

// TestShadowComparesOnTheSameInput: a shadow attached to a controller is
// called with the controller's input and its own configuration, its
// actions are compared and counted and never executed, and its failure
// changes nothing of the controller's reconcile.
func TestShadowComparesOnTheSameInput(t *testing.T) {
	c := newCluster(t, set("default", "web", nil))
	m := metrics.New()
	deps := controller.Deps{Lister: c, Cluster: c, Metrics: m}
	ctrl := controller.New(controller.Module{Runtime: &fakeGuest{caps: []abi.Capability{setEvents}, reconcile: func(_ context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
		return &abi.Result{Actions: []abi.Action{eventOn(req)}}, nil
	}}, Name: "ref", Config: []byte(`{"who":"ref"}`)}, deps)
	var seen []*abi.ReconcileRequest
	var fail bool
	shadow := controller.NewShadow(controller.Module{Name: "vendor", Config: []byte(`{"who":"vendor"}`), Runtime: &fakeGuest{reconcile: func(_ context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
		seen = append(seen, req)
		if fail {
			return nil, context.DeadlineExceeded
		}
		a := eventOn(req)
		a.Event.Reason = "Vendor"
		return &abi.Result{Actions: []abi.Action{a, a}}, nil
	}}}, deps)
	require.NoError(t, ctrl.Compare(shadow))

	out := ctrl.Reconcile(context.Background(), "default/web")
	require.NoError(t, out.Err)
	require.Len(t, seen, 1)
	require.Equal(t, "default/web", seen[0].Key)
	require.JSONEq(t, `{"who":"vendor"}`, string(seen[0].Config))
	require.NotNil(t, seen[0].StatefulSet)
	require.Len(t, c.Events(), 1, "only the controller's module's event is recorded")
	require.Equal(t, 1.0, testutil.ToFloat64(m.ShadowDisagreements.WithLabelValues("vendor", "ref")))

	fail = true
	out = ctrl.Reconcile(context.Background(), "default/web")
	require.NoError(t, out.Err, "a failing shadow does not fail the reconcile")
	require.Equal(t, 1.0, testutil.ToFloat64(m.ShadowDisagreements.WithLabelValues("vendor", "ref")))
	require.Equal(t, 0.0, testutil.ToFloat64(m.ShadowAgreements.WithLabelValues("vendor", "ref")))

	panicking := controller.NewShadow(controller.Module{Name: "panics", Runtime: &fakeGuest{reconcile: func(context.Context, *abi.ReconcileRequest) (*abi.Result, error) {
		panic("shadow panics")
	}}}, deps)
	require.NoError(t, ctrl.Compare(panicking))
	out = ctrl.Reconcile(context.Background(), "default/web")
	require.NoError(t, out.Err, "a panicking shadow fails its own call only")
	require.Equal(t, 1.0, testutil.ToFloat64(m.GuestErrors.WithLabelValues("panics", "other")))
	ctrl.StopComparing("panics")

	ctrl.StopComparing("vendor")
	ctrl.Reconcile(context.Background(), "default/web")
	require.Len(t, seen, 3, "detached: not called")

	pv := controller.NewShadow(controller.Module{Name: "pv", Runtime: &volumeGuest{}}, deps)
	require.ErrorContains(t, ctrl.Compare(pv), "compareWith must name a module of the same subject")
}
