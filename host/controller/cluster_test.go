package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/metrics"
)

const keptFinalizer = "example.com/kept"

// finalizerGuest asks for keptFinalizer on the request's StatefulSet, and
// warns about it: the event says, it does not write.
func finalizerGuest() *fakeGuest {
	return &fakeGuest{
		caps: []abi.Capability{setEvents, {Action: abi.ActionAddFinalizer, Resources: []string{"statefulsets"}}},
		reconcile: func(_ context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
			s := req.StatefulSet.Set.Metadata
			return &abi.Result{Actions: []abi.Action{
				{Type: abi.ActionAddFinalizer, Finalizer: keptFinalizer,
					Target: abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: s.Namespace, Name: s.Name, UID: s.UID}},
				eventOn(req),
			}}, nil
		},
	}
}

// TestShadowComparedWithTheCluster: a module in shadow mode without
// compareWith agrees with the cluster when nothing it asks would write; a
// difference is a disagreement only once it outlasts the settle time (the
// controller in charge may not have acted yet), is counted once, and a
// reconcile is asked for when it should have settled. Nothing is written.
func TestShadowComparedWithTheCluster(t *testing.T) {
	c := newCluster(t, set("default", "web", nil))
	m := metrics.New()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const settle = 30 * time.Second
	ctrl := controller.New(controller.Module{Runtime: finalizerGuest(), Name: "kept", Shadow: true},
		controller.Deps{Lister: c, Cluster: c, Metrics: m, ShadowSettle: settle, Now: func() time.Time { return now }})
	agreements := func() float64 {
		return testutil.ToFloat64(m.ShadowAgreements.WithLabelValues("kept", controller.CompareCluster))
	}
	disagreements := func() float64 {
		return testutil.ToFloat64(m.ShadowDisagreements.WithLabelValues("kept", controller.CompareCluster))
	}
	require.Equal(t, 0.0, disagreements(), "the series exists from the start, at zero")
	writes := c.WriteCount()

	differing := func() float64 { return testutil.ToFloat64(m.ShadowDiffering.WithLabelValues("kept")) }
	// counts are the agreements, the disagreements and the subjects
	// differing.
	counts := func() [3]float64 { return [3]float64{agreements(), disagreements(), differing()} }
	out := ctrl.Reconcile(context.Background(), "default/web")
	require.NoError(t, out.Err)
	require.Equal(t, settle, out.RequeueAfter, "looked at again once the difference should have settled")
	require.Equal(t, [3]float64{0, 0, 1}, counts(), "no disagreement yet: the controller in charge may not have acted")

	now = now.Add(settle / 2)
	out = ctrl.Reconcile(context.Background(), "default/web")
	require.Equal(t, settle/2, out.RequeueAfter, "the rest of the settle time")
	require.Equal(t, 0.0, disagreements())

	now = now.Add(settle / 2)
	for range 3 {
		out = ctrl.Reconcile(context.Background(), "default/web")
		require.NoError(t, out.Err)
		require.Zero(t, out.RequeueAfter)
	}
	require.Equal(t, [3]float64{0, 1, 1}, counts(), "the difference outlasted the settle time: one disagreement, however often reconciled")

	// The cluster comes to what the module asks (another controller
	// wrote it): agreement, and a new difference starts over.
	_, err := c.Patch(context.Background(), abi.KindStatefulSet, "default", "web", types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":["`+keptFinalizer+`"]}}`), "other")
	require.NoError(t, err)
	out = ctrl.Reconcile(context.Background(), "default/web")
	require.NoError(t, out.Err)
	require.Zero(t, out.RequeueAfter)
	require.Equal(t, [3]float64{1, 1, 0}, counts(), "agreeing now: the event alone changes nothing in the cluster, it is no difference")

	require.Empty(t, c.Events(), "shadow mode records nothing, the module's event included")
	require.Equal(t, writes+1, c.WriteCount(), "only the other controller's write")
}

// TestShadowForgetsAGoneSubject: a difference that had not settled when its
// subject went is not a disagreement later, when a subject of the same name
// comes back.
func TestShadowForgetsAGoneSubject(t *testing.T) {
	c := newCluster(t, set("default", "web", nil))
	m := metrics.New()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctrl := controller.New(controller.Module{Runtime: finalizerGuest(), Name: "kept", Shadow: true},
		controller.Deps{Lister: c, Cluster: c, Metrics: m, ShadowSettle: time.Minute, Now: func() time.Time { return now }})
	ctrl.Reconcile(context.Background(), "default/web")
	s, _ := c.Get(abi.KindStatefulSet, "default", "web")
	meta := s["metadata"].(map[string]any)
	require.NoError(t, c.Delete(context.Background(), abi.KindStatefulSet, "default", "web", meta["uid"].(string), meta["resourceVersion"].(string)))
	ctrl.Reconcile(context.Background(), "default/web")
	require.Equal(t, 0.0, testutil.ToFloat64(m.ShadowDiffering.WithLabelValues("kept")), "gone: differs no more")
	require.NoError(t, c.Load(set("default", "web", nil)))
	now = now.Add(time.Hour)
	out := ctrl.Reconcile(context.Background(), "default/web")
	require.Equal(t, time.Minute, out.RequeueAfter, "a new difference, with its own settle time")
	require.Equal(t, 0.0, testutil.ToFloat64(m.ShadowDisagreements.WithLabelValues("kept", controller.CompareCluster)))
}
