package memcluster_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

// Through the executor, 9,000 addFinalizer actions on one claim reach the
// cluster as one request, and the claim ends with all of them.
func TestExecutorCoalescesFinalizers(t *testing.T) {
	const n = 9000
	c := newCluster(t, claim("data-0"))
	obj, ok := c.Get(abi.KindPersistentVolumeClaim, "default", "data-0")
	require.True(t, ok)
	m := meta(t, obj)
	pvc := abi.PersistentVolumeClaim{Metadata: abi.ObjectMeta{Namespace: "default", Name: "data-0", UID: m["uid"].(string), ResourceVersion: m["resourceVersion"].(string)}}
	req := &abi.ReconcileRequest{Subject: abi.SubjectStatefulSet, Key: "default/web", StatefulSet: &abi.StatefulSetSubject{Claims: []abi.PersistentVolumeClaim{pvc}}}
	target := abi.ObjectRef{Kind: abi.KindPersistentVolumeClaim, Namespace: "default", Name: "data-0", UID: pvc.Metadata.UID}
	res := &abi.Result{}
	for i := range n {
		res.Actions = append(res.Actions, abi.Action{Type: abi.ActionAddFinalizer, Target: target, Finalizer: fmt.Sprintf("example.com/f-%d", i)})
	}
	manifest := abi.Manifest{Name: "many", Capabilities: []abi.Capability{{Action: abi.ActionAddFinalizer, Resources: []string{"persistentvolumeclaims"}}}}

	e := &actions.Executor{Cluster: c, Module: "many"}
	rep, err := e.Execute(context.Background(), manifest, req, res)
	require.NoError(t, err)
	require.Equal(t, n, rep.Counts[actions.Executed])
	require.Equal(t, 1, c.RequestCount())
	obj, _ = c.Get(abi.KindPersistentVolumeClaim, "default", "data-0")
	require.Len(t, meta(t, obj)["finalizers"], n)
}
