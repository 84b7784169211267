package memcluster_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

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

// Owner references through the executor, with owners as the cluster stores
// them: a set deleted with orphan propagation is refused as an owner, a
// terminating pod of the set is given its claim.
func TestExecutorOwnerReferences(t *testing.T) {
	set := map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "web", "uid": "set-uid"},
		"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}},
	}
	pod := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web-0", "uid": "pod-uid", "finalizers": []any{"example.com/drain"}, "deletionTimestamp": "2026-01-01T00:00:00Z"},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}},
	}
	tests := []struct {
		name    string
		setMeta map[string]any // merged into the set's metadata
		owner   abi.OwnerReference
		want    actions.Outcome
	}{
		{"set deleted with orphan propagation", map[string]any{"finalizers": []any{"orphan"}, "deletionTimestamp": "2026-01-01T00:00:00Z"},
			abi.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: true}, actions.Refused},
		{"set deleted in the foreground", map[string]any{"finalizers": []any{"foregroundDeletion"}, "deletionTimestamp": "2026-01-01T00:00:00Z"},
			abi.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: true}, actions.Executed},
		{"terminating pod", nil,
			abi.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "pod-uid", Controller: true}, actions.Executed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := runtimeCopy(set)
			for k, v := range tt.setMeta {
				s["metadata"].(map[string]any)[k] = v
			}
			c := newCluster(t, s, runtimeCopy(pod), claim("data-web-0", withMeta("uid", "claim-uid")))
			rv := func(kind, name string) string {
				obj, ok := c.Get(kind, "default", name)
				require.True(t, ok)
				return meta(t, obj)["resourceVersion"].(string)
			}
			objMeta := func(kind, name, uid string) abi.ObjectMeta {
				return abi.ObjectMeta{Namespace: "default", Name: name, UID: uid, ResourceVersion: rv(kind, name)}
			}
			req := &abi.ReconcileRequest{Subject: abi.SubjectStatefulSet, Key: "default/web", StatefulSet: &abi.StatefulSetSubject{
				Set:    &abi.StatefulSet{Metadata: objMeta(abi.KindStatefulSet, "web", "set-uid")},
				Pods:   []abi.Pod{{Metadata: objMeta(abi.KindPod, "web-0", "pod-uid")}},
				Claims: []abi.PersistentVolumeClaim{{Metadata: objMeta(abi.KindPersistentVolumeClaim, "data-web-0", "claim-uid")}},
			}}
			res := &abi.Result{Actions: []abi.Action{{
				Type:            abi.ActionUpdateOwnerReferences,
				Target:          abi.ObjectRef{Kind: abi.KindPersistentVolumeClaim, Namespace: "default", Name: "data-web-0", UID: "claim-uid"},
				OwnerReferences: &abi.OwnerReferencesChange{Add: []abi.OwnerReference{tt.owner}},
			}}}
			m := abi.Manifest{Name: "retention", Capabilities: []abi.Capability{{Action: abi.ActionUpdateOwnerReferences, Resources: []string{"persistentvolumeclaims"}}}}
			rep, _ := (&actions.Executor{Cluster: c, Module: "retention"}).Execute(context.Background(), m, req, res)
			require.Equal(t, tt.want, rep.Actions[0].Outcome, "%v", rep.Actions[0].Err)
			obj, _ := c.Get(abi.KindPersistentVolumeClaim, "default", "data-web-0")
			_, referenced := meta(t, obj)["ownerReferences"]
			require.Equal(t, tt.want == actions.Executed, referenced)
		})
	}
}

func runtimeCopy(obj map[string]any) map[string]any {
	return k8sruntime.DeepCopyJSON(obj)
}
