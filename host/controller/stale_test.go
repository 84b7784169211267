package controller_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/metrics"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// laggingLister serves one StatefulSet as it was when frozen, as an
// informer whose watch event for the host's own write has not arrived yet.
type laggingLister struct {
	snapshot.Lister
	frozen *appsv1.StatefulSet
}

func (l *laggingLister) GetObject(kind, ns, name string) (runtime.Object, error) {
	if kind == abi.KindStatefulSet && l.frozen != nil && l.frozen.Namespace == ns && l.frozen.Name == name {
		return l.frozen, nil
	}
	return l.Lister.GetObject(kind, ns, name)
}

// TestReconcileWaitsForItsOwnWrites: after a reconcile moved the set's
// partition, a reconcile whose input still shows the set as it was before
// that write does not call the module (which would take the host's old
// partition for the cluster's), and the first input that shows the write
// does.
func TestReconcileWaitsForItsOwnWrites(t *testing.T) {
	c := newCluster(t, set("default", "web", nil))
	obj, err := c.GetObject(abi.KindStatefulSet, "default", "web")
	require.NoError(t, err)
	before := obj.(*appsv1.StatefulSet)
	l := &laggingLister{Lister: c}
	var seen []string
	g := &fakeGuest{
		caps: []abi.Capability{{Action: abi.ActionSetPartition, Resources: []string{"statefulsets"}}},
		reconcile: func(_ context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
			s := req.StatefulSet.Set
			seen = append(seen, s.Metadata.ResourceVersion)
			p := int32(len(seen))
			return &abi.Result{Actions: []abi.Action{{
				Type:      abi.ActionSetPartition,
				Target:    abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: s.Metadata.Namespace, Name: s.Metadata.Name, UID: s.Metadata.UID},
				Partition: &p,
			}}}, nil
		},
	}
	m := metrics.New()
	ctrl := controller.New(controller.Module{Runtime: g, Name: "fake"}, controller.Deps{Lister: l, Cluster: c, Metrics: m})

	out := ctrl.Reconcile(context.Background(), "default/web")
	require.NoError(t, out.Err)
	require.Len(t, seen, 1)

	l.frozen = before.DeepCopy() // the cache has not seen the partition write
	out = ctrl.Reconcile(context.Background(), "default/web")
	require.NoError(t, out.Err)
	require.Len(t, seen, 1, "the module was called on an input older than the host's own write")
	require.Positive(t, out.RequeueAfter, "a stale input is tried again")
	require.Equal(t, 1.0, testutil.ToFloat64(m.StaleInputs.WithLabelValues("fake")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Reconciles.WithLabelValues("fake", "success")), "a reconcile put off is not counted as one")

	l.frozen = nil // the watch event arrived
	out = ctrl.Reconcile(context.Background(), "default/web")
	require.NoError(t, out.Err)
	require.Len(t, seen, 2)
	require.NotEqual(t, before.ResourceVersion, seen[1])
}
