package memcluster_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

func rv(t *testing.T, obj map[string]any) string {
	t.Helper()
	return meta(t, obj)["resourceVersion"].(string)
}

func TestMergePatch(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, expandable(), claim("a", inClass("expandable"), withMeta("labels", map[string]any{"keep": "1", "drop": "2"})))
	before, _ := c.Get("PersistentVolumeClaim", "default", "a")
	writes := c.WriteCount()

	got, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"drop":null,"add":"3"},"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u"}]}}`), "")
	require.NoError(t, err)

	after, _ := c.Get("PersistentVolumeClaim", "default", "a")
	require.Equal(t, got, rv(t, after), "Patch returns the stored resourceVersion")
	require.NotEqual(t, rv(t, before), got)
	require.Equal(t, map[string]any{"keep": "1", "add": "3"}, meta(t, after)["labels"])
	require.Equal(t, []any{map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}}, meta(t, after)["ownerReferences"])
	require.Equal(t, writes+1, c.WriteCount())
	require.Equal(t, int64(1), meta(t, after)["generation"], "metadata changes do not bump the generation")

	t.Run("a patch that changes nothing is not a write", func(t *testing.T) {
		same, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"add":"3","absent":null},"resourceVersion":"`+got+`"}}`), "")
		require.NoError(t, err)
		require.Equal(t, got, same)
		require.Equal(t, writes+1, c.WriteCount())
	})

	t.Run("server fields cannot be patched", func(t *testing.T) {
		_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType,
			[]byte(`{"metadata":{"creationTimestamp":"1999-01-01T00:00:00Z","generation":7,"deletionTimestamp":"1999-01-01T00:00:00Z"}}`), "")
		require.NoError(t, err)
		now, _ := c.Get("PersistentVolumeClaim", "default", "a")
		require.Equal(t, meta(t, after), meta(t, now))
	})

	t.Run("a spec change bumps the generation", func(t *testing.T) {
		_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType,
			[]byte(`{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`), "")
		require.NoError(t, err)
		now, _ := c.Get("PersistentVolumeClaim", "default", "a")
		require.Equal(t, int64(2), meta(t, now)["generation"])
	})
}

func TestPatchErrors(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, claim("a", withMeta("uid", "uid-a")))
	obj, _ := c.Get("PersistentVolumeClaim", "default", "a")
	current := rv(t, obj)

	tests := []struct {
		name  string
		obj   string
		pt    types.PatchType
		patch string
		is    func(error) bool
	}{
		{"stale resourceVersion", "a", types.MergePatchType, `{"metadata":{"resourceVersion":"999","labels":{"x":"y"}}}`, apierrors.IsConflict},
		{"other uid", "a", types.MergePatchType, `{"metadata":{"uid":"uid-b","labels":{"x":"y"}}}`, apierrors.IsConflict},
		{"missing object", "b", types.MergePatchType, `{"metadata":{"labels":{"x":"y"}}}`, apierrors.IsNotFound},
		{"not JSON", "a", types.MergePatchType, `{"metadata":`, apierrors.IsBadRequest},
		{"not an object", "a", types.MergePatchType, `[1]`, apierrors.IsBadRequest},
		{"rename", "a", types.MergePatchType, `{"metadata":{"name":"b"}}`, apierrors.IsBadRequest},
		{"wrong field type", "a", types.MergePatchType, `{"spec":{"accessModes":"x"}}`, apierrors.IsBadRequest},
		{"json patch", "a", types.JSONPatchType, `[]`, apierrors.IsBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", tt.obj, tt.pt, []byte(tt.patch), "")
			require.Error(t, err)
			require.True(t, tt.is(err), "unexpected error kind: %v", err)
			obj, _ := c.Get("PersistentVolumeClaim", "default", "a")
			require.Equal(t, current, rv(t, obj), "a failed patch writes nothing")
		})
	}

	t.Run("matching preconditions", func(t *testing.T) {
		_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType,
			[]byte(`{"metadata":{"uid":"uid-a","resourceVersion":"`+current+`","labels":{"x":"y"}}}`), "")
		require.NoError(t, err)
	})
}

func TestStatusSubresource(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, claim("a"))

	_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType,
		[]byte(`{"spec":{"volumeName":"pv"},"status":{"phase":"Lost"},"metadata":{"labels":{"x":"y"}}}`), "", "status")
	require.NoError(t, err)
	obj, _ := c.Get("PersistentVolumeClaim", "default", "a")
	require.Equal(t, "Lost", obj["status"].(map[string]any)["phase"])
	require.NotContains(t, obj["spec"], "volumeName", "a status patch changes only .status")
	require.NotContains(t, meta(t, obj), "labels")

	_, err = c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType,
		[]byte(`{"spec":{"volumeName":"pv"},"status":{"phase":"Bound"}}`), "")
	require.NoError(t, err)
	obj, _ = c.Get("PersistentVolumeClaim", "default", "a")
	require.Equal(t, "Lost", obj["status"].(map[string]any)["phase"], "a main-resource patch leaves .status alone")
	require.Equal(t, "pv", obj["spec"].(map[string]any)["volumeName"])

	_, err = c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType, []byte(`{}`), "", "scale")
	require.True(t, apierrors.IsBadRequest(err), "got %v", err)
}

func TestStatusOfCustomResource(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, map[string]any{
		"apiVersion": "kubeplug.dev/v1alpha1",
		"kind":       "VolumeClaimUpdate",
		"metadata":   map[string]any{"name": "web"},
		"spec":       map[string]any{"statefulSetName": "web"},
	})
	_, err := c.Patch(ctx, "VolumeClaimUpdate", "default", "web", types.MergePatchType,
		[]byte(`{"status":{"observedGeneration":1,"volumeClaimTemplates":[{"templateName":"data","compatibleReplicas":2}]}}`), "", "status")
	require.NoError(t, err)
	obj, _ := c.Get("VolumeClaimUpdate", "default", "web")
	require.Equal(t, map[string]any{
		"observedGeneration":   int64(1),
		"volumeClaimTemplates": []any{map[string]any{"templateName": "data", "compatibleReplicas": int64(2)}},
	}, obj["status"])
	require.Equal(t, int64(1), meta(t, obj)["generation"])
}

func TestApplyPatch(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, expandable(), claim("a", inClass("expandable"), withMeta("labels", map[string]any{"other": "x"})))
	obj, _ := c.Get("PersistentVolumeClaim", "default", "a")

	body := []byte(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: a
  namespace: default
  resourceVersion: "` + rv(t, obj) + `"
  labels: {mine: "y"}
spec:
  resources: {requests: {storage: 2Gi}}
`)
	_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.ApplyPatchType, body, "kubeplug")
	require.NoError(t, err)
	obj, _ = c.Get("PersistentVolumeClaim", "default", "a")
	require.Equal(t, map[string]any{"other": "x", "mine": "y"}, meta(t, obj)["labels"])
	require.Equal(t, "2Gi", obj["spec"].(map[string]any)["resources"].(map[string]any)["requests"].(map[string]any)["storage"])
	require.Equal(t, []any{"ReadWriteOnce"}, obj["spec"].(map[string]any)["accessModes"], "fields not applied are kept")

	t.Run("stale", func(t *testing.T) {
		_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.ApplyPatchType, body, "kubeplug")
		require.True(t, apierrors.IsConflict(err), "got %v", err)
	})
	t.Run("no field manager", func(t *testing.T) {
		_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"PersistentVolumeClaim"}`), "")
		require.True(t, apierrors.IsBadRequest(err), "got %v", err)
	})
	t.Run("other kind", func(t *testing.T) {
		_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"Pod"}`), "kubeplug")
		require.True(t, apierrors.IsBadRequest(err), "got %v", err)
	})
}

func TestCanceledContext(t *testing.T) {
	c := newCluster(t, claim("a"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType, []byte(`{}`), "")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, c.Delete(ctx, "PersistentVolumeClaim", "default", "a", "", ""), context.Canceled)
	require.Zero(t, c.RequestCount())
}
