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

// expandable is a StorageClass that allows volume expansion; inClass puts a
// claim in it. The API server lets a bound claim's request grow only then.
func expandable() map[string]any {
	return map[string]any{
		"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
		"metadata":    map[string]any{"name": "expandable"},
		"provisioner": "csi.example.com", "allowVolumeExpansion": true,
	}
}

func inClass(class string) func(map[string]any) {
	return func(obj map[string]any) { obj["spec"].(map[string]any)["storageClassName"] = class }
}

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
	c := newCluster(t, expandable(), claim("a", inClass("expandable"), withMeta("uid", "uid-a"), withMeta("labels", map[string]any{"app": "web"})))
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

// A claim's spec is immutable but for a bound claim's storage request and
// volumeAttributesClassName, as kube-apiserver's validation has it; the
// messages are the API server's (e2e/crd checks them on a real one).
func TestClaimSpecUpdateRules(t *testing.T) {
	ctx := context.Background()
	bound := func(obj map[string]any) {
		obj["status"] = map[string]any{"phase": "Bound", "capacity": map[string]any{"storage": "1Gi"}, "currentVolumeAttributesClassName": "silver"}
		obj["spec"].(map[string]any)["volumeAttributesClassName"] = "silver"
	}
	pending := func(obj map[string]any) { obj["status"] = map[string]any{"phase": "Pending"} }
	tests := []struct {
		name   string
		status func(map[string]any)
		spec   string
		want   string // "" for accepted
	}{
		{"bound: storage up", bound, `{"resources":{"requests":{"storage":"2Gi"}}}`, ""},
		{"bound: class changed", bound, `{"volumeAttributesClassName":"gold"}`, ""},
		{"bound: storage down to capacity", bound, `{"resources":{"requests":{"storage":"1Gi"}}}`, ""}, // equal: no change
		{"bound: limits", bound, `{"resources":{"limits":{"storage":"2Gi"}}}`, "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"},
		{"bound: storage class", bound, `{"storageClassName":"fast"}`, "spec is immutable"},
		{"bound: storage up without a class", func(obj map[string]any) { bound(obj); delete(obj["spec"].(map[string]any), "storageClassName") }, `{"resources":{"requests":{"storage":"2Gi"}}}`,
			"only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"},
		{"bound: storage up in a class that is not there", func(obj map[string]any) { bound(obj); inClass("fixed")(obj) }, `{"resources":{"requests":{"storage":"2Gi"}}}`,
			"only dynamically provisioned pvc can be resized"},
		{"bound: access modes", bound, `{"accessModes":["ReadWriteMany"]}`, "spec is immutable"},
		{"bound: class removed", bound, `{"volumeAttributesClassName":null}`, "update to nil is forbidden when status.currentVolumeAttributesClassName is not nil"},
		{"bound: class emptied", bound, `{"volumeAttributesClassName":""}`, "update to empty string is forbidden"},
		{"bound: storage below capacity", bound, `{"resources":{"requests":{"storage":"512Mi"}}}`, "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"},
		{"pending: storage", pending, `{"resources":{"requests":{"storage":"2Gi"}}}`, "spec is immutable"},
		{"pending: class", pending, `{"volumeAttributesClassName":"gold"}`, "spec is immutable"},
		{"pending: volumeName set once", pending, `{"volumeName":"pv-1"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, expandable(), claim("a", inClass("expandable"), tt.status))
			obj, _ := c.Get("PersistentVolumeClaim", "default", "a")
			_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType, []byte(`{"spec":`+tt.spec+`}`), "kubeplug")
			now, _ := c.Get("PersistentVolumeClaim", "default", "a")
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.True(t, apierrors.IsInvalid(err) || apierrors.IsForbidden(err), "got %v", err)
			require.ErrorContains(t, err, tt.want)
			require.Equal(t, rv(t, obj), rv(t, now), "nothing written")
		})
	}
	t.Run("bound: storage down but above capacity (RecoverVolumeExpansionFailure)", func(t *testing.T) {
		c := newCluster(t, expandable(), claim("a", inClass("expandable"), bound))
		_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType, []byte(`{"spec":{"resources":{"requests":{"storage":"4Gi"}}}}`), "kubeplug")
		require.NoError(t, err)
		_, err = c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType, []byte(`{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`), "kubeplug")
		require.NoError(t, err, "the API server accepts it; kubeplug's executor lowers only a request it set")
		_, err = c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType, []byte(`{"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`), "kubeplug")
		require.True(t, apierrors.IsInvalid(err), "down to exactly the capacity: got %v", err)
		require.ErrorContains(t, err, "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity")
	})
	t.Run("volumeName set cannot change", func(t *testing.T) {
		c := newCluster(t, claim("a", bound, func(obj map[string]any) { obj["spec"].(map[string]any)["volumeName"] = "pv-1" }))
		_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType, []byte(`{"spec":{"volumeName":"pv-2"}}`), "kubeplug")
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
	})
}

// A field kubeplug's apply set alone goes away when its next apply omits it;
// one it shares with the object's other writers, or that another writer
// changed since, stays (e2e/crd runs the same sequence on kube-apiserver).
func TestApplyDropsOnlyWhatItOwnsAlone(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, claim("a", withMeta("uid", "uid-a"), withMeta("labels", map[string]any{"app": "web"})))
	apply := func(labels string) {
		t.Helper()
		body := `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"a","namespace":"default","labels":` + labels + `}}`
		_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.ApplyPatchType, []byte(body), "kubeplug")
		require.NoError(t, err)
	}
	labels := func() any {
		obj, _ := c.Get("PersistentVolumeClaim", "default", "a")
		return meta(t, obj)["labels"]
	}
	apply(`{"app":"web","tier":"gold","zone":"a","user":"x"}`)
	require.Equal(t, map[string]any{"app": "web", "tier": "gold", "zone": "a", "user": "x"}, labels())
	// A user changes one of kubeplug's labels: it is theirs now.
	_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"user":"y"}}}`), "kubectl")
	require.NoError(t, err)

	apply(`{"tier":"gold"}`)
	require.Equal(t, map[string]any{"app": "web", "tier": "gold", "user": "y"}, labels(),
		"zone (kubeplug's alone) is removed; app (shared with its creator) and user (changed by kubectl) stay")

	apply(`{}`)
	require.Equal(t, map[string]any{"app": "web", "user": "y"}, labels())
}

// An object deleted and created again under its name (same uid: Load
// derives one from the name when the object has none) starts with no apply
// history: what the first one's applies owned is not the second one's,
// whether the first went at once or when its last finalizer did.
func TestApplyOwnershipEndsWithTheObject(t *testing.T) {
	ctx := context.Background()
	for _, finalizer := range []bool{false, true} {
		t.Run("finalizer "+strconv.FormatBool(finalizer), func(t *testing.T) {
			var extra []func(map[string]any)
			if finalizer {
				extra = append(extra, withMeta("finalizers", []any{"example.com/f"}))
			}
			c := newCluster(t, claim("a", extra...))
			apply := func(labels string) {
				t.Helper()
				body := `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"a","namespace":"default","labels":` + labels + `}}`
				_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.ApplyPatchType, []byte(body), "kubeplug")
				require.NoError(t, err)
			}
			apply(`{"zone":"a"}`)
			require.NoError(t, c.Delete(ctx, "PersistentVolumeClaim", "default", "a", "", ""))
			if finalizer {
				_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), "kubectl")
				require.NoError(t, err)
			}
			_, ok := c.Get("PersistentVolumeClaim", "default", "a")
			require.False(t, ok)
			require.NoError(t, c.Load(claim("a", withMeta("labels", map[string]any{"zone": "a"}))))

			apply(`{}`)
			obj, _ := c.Get("PersistentVolumeClaim", "default", "a")
			require.Equal(t, map[string]any{"zone": "a"}, meta(t, obj)["labels"], "the new claim's creator set zone; kubeplug never applied it to this claim")
		})
	}
}
