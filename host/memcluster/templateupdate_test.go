package memcluster_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// The writes of the templateupdate module's actions, as the executor sends
// them, behave as kube-apiserver's: applyClaim's server-side apply,
// setPartition's merge patch of a StatefulSet and updateClaimUpdateStatus's
// merge patch of a VolumeClaimUpdate's status subresource.

func statefulSet(strategy map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "StatefulSet",
		"metadata":   map[string]any{"name": "web", "uid": "set-uid"},
		"spec": map[string]any{
			"replicas":       int64(3),
			"selector":       map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template":       map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}},
			"updateStrategy": strategy,
		},
	}
}

func partitionPatch(rv string, p int) []byte {
	return []byte(`{"metadata":{"uid":"set-uid","resourceVersion":"` + rv + `"},"spec":{"updateStrategy":{"rollingUpdate":{"partition":` + strconv.Itoa(p) + `}}}}`)
}

func TestSetPartitionPatch(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, statefulSet(map[string]any{"type": "RollingUpdate"}))
	obj, _ := c.Get("StatefulSet", "default", "web")

	_, err := c.Patch(ctx, "StatefulSet", "default", "web", types.MergePatchType, partitionPatch(rv(t, obj), 2), "kubeplug")
	require.NoError(t, err)
	obj, _ = c.Get("StatefulSet", "default", "web")
	require.Equal(t, map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"partition": int64(2)}},
		obj["spec"].(map[string]any)["updateStrategy"])
	require.Equal(t, int64(2), meta(t, obj)["generation"], "a partition change is a spec change")

	// Back to 0: the API server keeps an explicit 0.
	_, err = c.Patch(ctx, "StatefulSet", "default", "web", types.MergePatchType, partitionPatch(rv(t, obj), 0), "kubeplug")
	require.NoError(t, err)
	obj, _ = c.Get("StatefulSet", "default", "web")
	require.Equal(t, map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"partition": int64(0)}},
		obj["spec"].(map[string]any)["updateStrategy"])

	t.Run("stale", func(t *testing.T) {
		_, err := c.Patch(ctx, "StatefulSet", "default", "web", types.MergePatchType, partitionPatch("1", 1), "kubeplug")
		require.True(t, apierrors.IsConflict(err), "got %v", err)
	})
	t.Run("negative", func(t *testing.T) {
		obj, _ := c.Get("StatefulSet", "default", "web")
		_, err := c.Patch(ctx, "StatefulSet", "default", "web", types.MergePatchType, partitionPatch(rv(t, obj), -1), "kubeplug")
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		require.ErrorContains(t, err, "spec.updateStrategy.rollingUpdate.partition")
	})
	t.Run("under OnDelete", func(t *testing.T) {
		c := newCluster(t, statefulSet(map[string]any{"type": "OnDelete"}))
		obj, _ := c.Get("StatefulSet", "default", "web")
		_, err := c.Patch(ctx, "StatefulSet", "default", "web", types.MergePatchType, partitionPatch(rv(t, obj), 1), "kubeplug")
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		require.ErrorContains(t, err, "spec.updateStrategy.rollingUpdate")
		require.ErrorContains(t, err, "only allowed for updateStrategy 'RollingUpdate'")
	})
}

func claimUpdate() map[string]any {
	return map[string]any{
		"apiVersion": "kubeplug.dev/v1alpha1",
		"kind":       "VolumeClaimUpdate",
		"metadata":   map[string]any{"name": "web", "uid": "vcu-uid"},
		"spec":       map[string]any{"statefulSetName": "web", "volumeClaimSyncStrategy": "LockStep"},
		"status":     map[string]any{"observedGeneration": int64(1), "heldPartition": int64(3), "userPartition": int64(1)},
	}
}

func TestClaimUpdateStatusPatch(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, claimUpdate())
	obj, _ := c.Get("VolumeClaimUpdate", "default", "web")
	gen := meta(t, obj)["generation"]

	// What updateClaimUpdateStatus sends when the hold ends: the whole
	// status, null for what is gone.
	_, err := c.Patch(ctx, "VolumeClaimUpdate", "default", "web", types.MergePatchType, []byte(`{"metadata":{"uid":"vcu-uid","resourceVersion":"`+rv(t, obj)+`"},
		"status":{"observedGeneration":1,"volumeClaimTemplates":[{"templateName":"data","compatibleReplicas":3,"totalCapacity":{"storage":"6Gi"}}],
		"conditions":[{"type":"Progressing","status":"False","reason":"Complete","lastTransitionTime":"2026-01-01T00:00:00Z"}],
		"heldPartition":null,"userPartition":null}}`), "kubeplug", "status")
	require.NoError(t, err)
	obj, _ = c.Get("VolumeClaimUpdate", "default", "web")
	require.Equal(t, map[string]any{
		"observedGeneration":   int64(1),
		"volumeClaimTemplates": []any{map[string]any{"templateName": "data", "compatibleReplicas": int64(3), "totalCapacity": map[string]any{"storage": "6Gi"}}},
		"conditions":           []any{map[string]any{"type": "Progressing", "status": "False", "reason": "Complete", "lastTransitionTime": "2026-01-01T00:00:00Z"}},
	}, obj["status"])
	require.Equal(t, gen, meta(t, obj)["generation"], "a status write is not a spec change")
	require.Equal(t, "LockStep", obj["spec"].(map[string]any)["volumeClaimSyncStrategy"])

	// A hold of 0 is a value, not an absence; lists are replaced whole.
	_, err = c.Patch(ctx, "VolumeClaimUpdate", "default", "web", types.MergePatchType, []byte(`{"status":{"heldPartition":2,"userPartition":0,"conditions":null,"volumeClaimTemplates":[]}}`), "kubeplug", "status")
	require.NoError(t, err)
	obj, _ = c.Get("VolumeClaimUpdate", "default", "web")
	require.Equal(t, map[string]any{"observedGeneration": int64(1), "heldPartition": int64(2), "userPartition": int64(0), "volumeClaimTemplates": []any{}}, obj["status"])

	// A patch of the main resource leaves status alone; a spec change bumps
	// the generation.
	_, err = c.Patch(ctx, "VolumeClaimUpdate", "default", "web", types.MergePatchType, []byte(`{"spec":{"volumeClaimSyncStrategy":"Async"},"status":{"heldPartition":null}}`), "")
	require.NoError(t, err)
	obj, _ = c.Get("VolumeClaimUpdate", "default", "web")
	require.Equal(t, int64(2), obj["status"].(map[string]any)["heldPartition"])
	require.Equal(t, "Async", obj["spec"].(map[string]any)["volumeClaimSyncStrategy"])
	require.Equal(t, gen.(int64)+1, meta(t, obj)["generation"])
}

// applyClaim's body: the executor's, with a template's labels, annotations,
// request and class.
func claimApply(rv, labels, storage string) []byte {
	return []byte(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"a","namespace":"default","uid":"uid-a","resourceVersion":"` + rv + `",
		"labels":` + labels + `},"spec":{"resources":{"requests":{"storage":"` + storage + `"}},"volumeAttributesClassName":"gold"}}`)
}

func TestApplyClaim(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, claim("a", withMeta("uid", "uid-a"), withMeta("labels", map[string]any{"app": "web"})))
	obj, _ := c.Get("PersistentVolumeClaim", "default", "a")

	_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.ApplyPatchType, claimApply(rv(t, obj), `{"tier":"gold"}`, "2048Mi"), "kubeplug")
	require.NoError(t, err)
	obj, _ = c.Get("PersistentVolumeClaim", "default", "a")
	require.Equal(t, map[string]any{"app": "web", "tier": "gold"}, meta(t, obj)["labels"], "a user's labels are kept")
	spec := obj["spec"].(map[string]any)
	require.Equal(t, map[string]any{"requests": map[string]any{"storage": "2Gi"}}, spec["resources"], "quantities are stored canonical")
	require.Equal(t, "gold", spec["volumeAttributesClassName"])
	require.Equal(t, []any{"ReadWriteOnce"}, spec["accessModes"])
	require.Equal(t, map[string]any{"phase": "Bound"}, obj["status"], "an apply of the main resource leaves status alone")

	// The same apply again changes nothing and is not a write.
	writes := c.WriteCount()
	same, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.ApplyPatchType, claimApply(rv(t, obj), `{"tier":"gold"}`, "2Gi"), "kubeplug")
	require.NoError(t, err)
	require.Equal(t, rv(t, obj), same)
	require.Equal(t, writes, c.WriteCount())
}
