package memcluster_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

	set, err := c.GetStatefulSet("default", "web")
	require.NoError(t, err)
	require.Equal(t, int32(3), *set.Spec.Replicas)
	require.NotEmpty(t, set.UID)

	pods, err := c.ListPods("default")
	require.NoError(t, err)
	require.Len(t, pods, 2)
	require.Equal(t, "web-0", pods[0].Name)
	all, err := c.ListPods("")
	require.NoError(t, err)
	require.Len(t, all, 3)

	pvc, err := c.GetClaim("default", "data-web-0")
	require.NoError(t, err)
	require.Equal(t, "1Gi", pvc.Spec.Resources.Requests.Storage().String())
	claims, err := c.ListClaims("default")
	require.NoError(t, err)
	require.Len(t, claims, 1)

	pv, err := c.GetVolume("pv")
	require.NoError(t, err)
	require.Equal(t, "vol-1", pv.Spec.CSI.VolumeHandle)

	sc, err := c.GetStorageClass("fast")
	require.NoError(t, err)
	require.Equal(t, "csi.example.com", sc.Provisioner)

	vcus, err := c.ListVolumeClaimUpdates("default")
	require.NoError(t, err)
	require.Len(t, vcus, 1)
	require.Equal(t, "web", vcus[0].GetName())
	none, err := c.ListVolumeClaimUpdates("other")
	require.NoError(t, err)
	require.Empty(t, none)

	t.Run("objects are the caller's own", func(t *testing.T) {
		pvc.Labels = map[string]string{"x": "y"}
		vcus[0].SetLabels(map[string]string{"x": "y"})
		again, err := c.GetClaim("default", "data-web-0")
		require.NoError(t, err)
		require.Empty(t, again.Labels)
		vcus, err := c.ListVolumeClaimUpdates("")
		require.NoError(t, err)
		require.Empty(t, vcus[0].GetLabels())
	})

	t.Run("not found", func(t *testing.T) {
		_, err := c.GetStatefulSet("default", "db")
		require.True(t, apierrors.IsNotFound(err), "got %v", err)
		_, err = c.GetClaim("other", "data-web-0")
		require.True(t, apierrors.IsNotFound(err), "got %v", err)
		_, err = c.GetVolume("nope")
		require.True(t, apierrors.IsNotFound(err), "got %v", err)
		_, err = c.GetStorageClass("slow")
		require.True(t, apierrors.IsNotFound(err), "got %v", err)
	})
}

// The two listings the statefulset builder reads keep what the live cache's
// indexes keep: pods by their controller's uid, claims by the sets their
// names could be claims of.
func TestListerNarrowedListings(t *testing.T) {
	pod := func(name string, owners ...any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "ownerReferences": owners}}
	}
	ref := func(uid string, controller bool) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": uid, "controller": controller}
	}
	c := newCluster(t,
		pod("web-0", ref("u1", true)),
		pod("web-1", ref("u1", false)),
		pod("web-2", ref("u2", true)),
		pod("stray"),
		claim("data-web-0"), claim("data-a-web-1"), claim("data-web-x"), claim("web-0"),
	)
	pods, err := c.ListControlledPods("default", "u1")
	require.NoError(t, err)
	require.Len(t, pods, 1)
	require.Equal(t, "web-0", pods[0].Name)

	var names []string
	claims, err := c.ListClaimsNamedFor("default", "web")
	require.NoError(t, err)
	for _, pvc := range claims {
		names = append(names, pvc.Name)
	}
	require.Equal(t, []string{"data-a-web-1", "data-web-0"}, names)
}
