package memcluster_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

func TestLister(t *testing.T) {
	c := newCluster(t,
		map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"name": "web"}, "spec": map[string]any{"replicas": 3}},
		map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web-1"}},
		map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web-0"}},
		map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web-0", "namespace": "other"}},
		claim("data-web-0"),
		map[string]any{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "pv"},
			"spec": map[string]any{"csi": map[string]any{"driver": "csi.example.com", "volumeHandle": "vol-1"}}},
		map[string]any{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": map[string]any{"name": "fast"}, "provisioner": "csi.example.com"},
		map[string]any{"apiVersion": "kubeplug.dev/v1alpha1", "kind": "VolumeClaimUpdate", "metadata": map[string]any{"name": "web"}, "spec": map[string]any{"statefulSetName": "web"}},
	)

	set, err := c.GetObject(abi.KindStatefulSet, "default", "web")
	require.NoError(t, err)
	require.Equal(t, int32(3), *set.(*appsv1.StatefulSet).Spec.Replicas)
	require.NotEmpty(t, set.(*appsv1.StatefulSet).UID)

	pods, err := c.ListPods("default")
	require.NoError(t, err)
	require.Len(t, pods, 2)
	require.Equal(t, "web-0", pods[0].Name)
	all, err := c.ListPods("")
	require.NoError(t, err)
	require.Len(t, all, 3)

	pvc, err := c.GetObject(abi.KindPersistentVolumeClaim, "default", "data-web-0")
	require.NoError(t, err)
	require.Equal(t, "1Gi", pvc.(*corev1.PersistentVolumeClaim).Spec.Resources.Requests.Storage().String())
	claims, err := c.ListClaims("default")
	require.NoError(t, err)
	require.Len(t, claims, 1)

	pv, err := c.GetObject(abi.KindPersistentVolume, "", "pv")
	require.NoError(t, err)
	require.Equal(t, "vol-1", pv.(*corev1.PersistentVolume).Spec.CSI.VolumeHandle)

	sc, err := c.GetObject(abi.KindStorageClass, "", "fast")
	require.NoError(t, err)
	require.Equal(t, "csi.example.com", sc.(*storagev1.StorageClass).Provisioner)

	vcus, err := c.ByIndex(snapshot.ClaimUpdatesBySet, snapshot.Key("default", "web"))
	require.NoError(t, err)
	require.Len(t, vcus, 1)
	require.Equal(t, "web", vcus[0].(*unstructured.Unstructured).GetName())
	none, err := c.ByIndex(snapshot.ClaimUpdatesBySet, snapshot.Key("other", "web"))
	require.NoError(t, err)
	require.Empty(t, none)

	t.Run("objects are the caller's own", func(t *testing.T) {
		pvc.(*corev1.PersistentVolumeClaim).Labels = map[string]string{"x": "y"}
		vcus[0].(*unstructured.Unstructured).SetLabels(map[string]string{"x": "y"})
		again, err := c.GetObject(abi.KindPersistentVolumeClaim, "default", "data-web-0")
		require.NoError(t, err)
		require.Empty(t, again.(*corev1.PersistentVolumeClaim).Labels)
		vcus, err := c.ByIndex(snapshot.ClaimUpdatesBySet, snapshot.Key("default", "web"))
		require.NoError(t, err)
		require.Empty(t, vcus[0].(*unstructured.Unstructured).GetLabels())
	})

	t.Run("not found", func(t *testing.T) {
		_, err := c.GetObject(abi.KindStatefulSet, "default", "db")
		require.True(t, apierrors.IsNotFound(err), "got %v", err)
		_, err = c.GetObject(abi.KindPersistentVolumeClaim, "other", "data-web-0")
		require.True(t, apierrors.IsNotFound(err), "got %v", err)
		_, err = c.GetObject(abi.KindPersistentVolume, "", "nope")
		require.True(t, apierrors.IsNotFound(err), "got %v", err)
		_, err = c.GetObject(abi.KindStorageClass, "", "slow")
		require.True(t, apierrors.IsNotFound(err), "got %v", err)
	})
}

// TestListerByIndex: each index keeps what the live cache's informer
// indexer of it keeps (pods by their controller's uid, claims by the sets
// their names could be claims of, VolumeClaimUpdates by the set they name),
// of the key's namespace only, typed as GetObject types them and sorted by
// name.
func TestListerByIndex(t *testing.T) {
	pod := func(name string, owners ...any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "ownerReferences": owners}}
	}
	ref := func(uid string, controller bool) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": uid, "controller": controller}
	}
	update := func(ns, name string, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "kubeplug.dev/v1alpha1", "kind": "VolumeClaimUpdate",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}
	}
	c := newCluster(t,
		pod("web-1", ref("u1", true)),
		pod("web-0", ref("u1", true)),
		pod("web-2", ref("u1", false)),
		pod("web-3", ref("u2", true)),
		pod("stray"),
		claim("data-web-0"), claim("data-a-web-1"), claim("data-web-x"), claim("web-0"),
		claim("data-web-0", withMeta("namespace", "other")),
		update("default", "b", map[string]any{"statefulSetName": "web"}),
		update("default", "a", map[string]any{"statefulSetName": "web"}),
		update("default", "c", map[string]any{"statefulSetName": "db"}),
		update("default", "d", map[string]any{}),
		update("other", "e", map[string]any{"statefulSetName": "web"}),
	)
	for _, tc := range []struct {
		idx  snapshot.Index
		key  string
		want []string
	}{
		{snapshot.ControlledPods, snapshot.Key("default", "u1"), []string{"web-0", "web-1"}},
		{snapshot.ControlledPods, snapshot.Key("other", "u1"), nil},
		{snapshot.ClaimsBySetName, snapshot.Key("default", "web"), []string{"data-a-web-1", "data-web-0"}},
		{snapshot.ClaimsBySetName, snapshot.Key("default", "a-web"), []string{"data-a-web-1"}},
		{snapshot.ClaimUpdatesBySet, snapshot.Key("default", "web"), []string{"a", "b"}},
		{snapshot.ClaimUpdatesBySet, snapshot.Key("default", ""), nil},
	} {
		t.Run(tc.idx.Name+" "+tc.key, func(t *testing.T) {
			objs, err := c.ByIndex(tc.idx, tc.key)
			require.NoError(t, err)
			var names []string
			for _, o := range objs {
				_, isUnstructured := o.(*unstructured.Unstructured)
				require.Equal(t, tc.idx.Kind == abi.KindVolumeClaimUpdate, isUnstructured, "only a kind without a Go type is unstructured: %T", o)
				m, err := apimeta.Accessor(o)
				require.NoError(t, err)
				names = append(names, m.GetName())
			}
			require.Equal(t, tc.want, names)
		})
	}

	t.Run("an index whose keys fail", func(t *testing.T) {
		bad := snapshot.Index{Name: "bad", Kind: abi.KindPod, Keys: func(runtime.Object) ([]string, error) {
			return nil, apierrors.NewBadRequest("no keys")
		}}
		_, err := c.ByIndex(bad, "x")
		require.ErrorContains(t, err, "index bad")
		require.ErrorContains(t, err, "no keys")
	})
}

// A typed object is converted afresh from the stored one: writing into its
// maps and lists in place leaves the cluster's copy as it was.
func TestListerTypedObjectsShareNothing(t *testing.T) {
	c := newCluster(t, map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{
		"name": "p", "labels": map[string]any{"a": "b"},
		"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u1", "controller": true}},
	}, "status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}})
	read := func() *corev1.Pod {
		o, err := c.GetObject(abi.KindPod, "default", "p")
		require.NoError(t, err)
		return o.(*corev1.Pod)
	}
	p := read()
	p.Labels["a"] = "changed"
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	require.Equal(t, "b", read().Labels["a"])
	require.Equal(t, corev1.ConditionTrue, read().Status.Conditions[0].Status)
	pods, err := c.ByIndex(snapshot.ControlledPods, snapshot.Key("default", "u1"))
	require.NoError(t, err)
	require.Len(t, pods, 1)
	pods[0].(*corev1.Pod).Labels["a"] = "changed"
	pods[0].(*corev1.Pod).OwnerReferences[0].Name = "other"
	require.Equal(t, "b", read().Labels["a"])
	require.Equal(t, "web", read().OwnerReferences[0].Name)
}
