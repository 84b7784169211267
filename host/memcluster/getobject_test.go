package memcluster_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubeplug/kubeplug/abi"
)

// TestGetObject: any kind of abi's table is read by name, as its Go type
// when client-go's scheme knows it and unstructured otherwise.
func TestGetObject(t *testing.T) {
	c := newCluster(t,
		map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"name": "web"}, "spec": map[string]any{"replicas": 3}},
		map[string]any{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "pv"}},
		map[string]any{"apiVersion": "kubeplug.dev/v1alpha1", "kind": "VolumeClaimUpdate", "metadata": map[string]any{"name": "u"}, "spec": map[string]any{"statefulSetName": "web"}},
	)
	set, err := c.GetObject(abi.KindStatefulSet, "default", "web")
	require.NoError(t, err)
	require.Equal(t, int32(3), *set.(*appsv1.StatefulSet).Spec.Replicas)
	pv, err := c.GetObject(abi.KindPersistentVolume, "", "pv")
	require.NoError(t, err)
	require.Equal(t, "pv", pv.(*corev1.PersistentVolume).Name)
	u, err := c.GetObject(abi.KindVolumeClaimUpdate, "default", "u")
	require.NoError(t, err)
	require.Equal(t, "web", u.(*unstructured.Unstructured).Object["spec"].(map[string]any)["statefulSetName"])
	_, err = c.GetObject(abi.KindStatefulSet, "other", "web")
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}
