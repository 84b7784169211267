package snapshot_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// These tests hold the SDK's test builders to the host: a module's native
// tests (sdktest) must see what `kubeplug test` and the live host send for
// the same object, or a module passes one and fails the other.

// TestSDKTestAppliesTheHostsDefaults projects objects that set nothing the
// host defaults, and sends their bare abi twins through sdktest.Request:
// every default one side fills in, the other must fill in the same way.
func TestSDKTestAppliesTheHostsDefaults(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	meta := metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid"}
	abiMeta := abi.ObjectMeta{Name: "web", Namespace: "default", UID: "web-uid"}
	// Replicas is given on both sides: the wire cannot tell 0 from unset
	// (abi.StatefulSetSpec says so).
	three := int32(3)

	t.Run("statefulset without a retention policy", func(t *testing.T) {
		host := snapshot.ProjectStatefulSet(&appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: &three}})
		sdk := sdktest.Request(now, &abi.StatefulSet{Metadata: abiMeta, Spec: abi.StatefulSetSpec{Replicas: 3}}).StatefulSet.Set
		require.Equal(t, host, sdk)
	})
	t.Run("statefulset with half a retention policy", func(t *testing.T) {
		host := snapshot.ProjectStatefulSet(&appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: &three,
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}}})
		sdk := sdktest.Request(now, &abi.StatefulSet{Metadata: abiMeta, Spec: abi.StatefulSetSpec{Replicas: 3,
			PersistentVolumeClaimRetentionPolicy: &abi.StatefulSetPersistentVolumeClaimPolicy{WhenScaled: "Delete"}}}).StatefulSet.Set
		require.Equal(t, host, sdk)
	})
	t.Run("pod and claim", func(t *testing.T) {
		req := sdktest.Request(now, &abi.StatefulSet{Metadata: abiMeta, Spec: abi.StatefulSetSpec{Replicas: 3}},
			&abi.Pod{Metadata: abi.ObjectMeta{Name: "web-0", Namespace: "default"}},
			&abi.PersistentVolumeClaim{Metadata: abi.ObjectMeta{Name: "data-web-0", Namespace: "default"}})
		require.Equal(t, snapshot.ProjectPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default"}}), &req.StatefulSet.Pods[0])
		require.Equal(t, snapshot.ProjectClaim(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-web-0", Namespace: "default"}}), &req.StatefulSet.Claims[0])
	})
	t.Run("storageclass", func(t *testing.T) {
		host := snapshot.ProjectStorageClass(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "p"})
		req := sdktest.Request(now, &abi.StatefulSet{Metadata: abiMeta}, &abi.StorageClass{Metadata: abi.ObjectMeta{Name: "fast"}, Provisioner: "p"})
		require.Equal(t, host, &req.StatefulSet.StorageClasses[0])
		req = sdktest.Request(now, &abi.PersistentVolume{Metadata: abi.ObjectMeta{Name: "pv"}}, &abi.StorageClass{Metadata: abi.ObjectMeta{Name: "fast"}, Provisioner: "p"})
		require.Equal(t, host, req.PersistentVolume.StorageClass)
	})
	t.Run("persistentvolume", func(t *testing.T) {
		host := snapshot.ProjectVolume(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}})
		sdk := sdktest.Request(now, &abi.PersistentVolume{Metadata: abi.ObjectMeta{Name: "pv"}}).PersistentVolume.Volume
		require.Equal(t, host, sdk)
	})
}

// TestSDKTestBuildersAreProjections: what each builder makes is the host's
// projection of the object its doc comment describes, written as a case
// file (or kubectl get -o yaml) has it, with no field the host defaults.
func TestSDKTestBuildersAreProjections(t *testing.T) {
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	gi := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	fs := corev1.PersistentVolumeFilesystem
	meta := func(name, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(name + "-uid"), ResourceVersion: "1", Generation: 1}
	}
	three, ten := int32(3), int32(10)
	set := &appsv1.StatefulSet{
		ObjectMeta: meta("web", "default"),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &three,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			ServiceName:         "web",
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwo, VolumeMode: &fs,
					Resources: corev1.VolumeResourceRequirements{Requests: gi}},
			}},
			RevisionHistoryLimit: &ten,
		},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 3, ReadyReplicas: 3, CurrentReplicas: 3,
			UpdatedReplicas: 3, AvailableReplicas: 3, CurrentRevision: "web-1", UpdateRevision: "web-1"},
	}
	require.Equal(t, snapshot.ProjectStatefulSet(set), sdktest.StatefulSet("web", 3))

	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
	require.Equal(t, snapshot.ProjectStatefulSet(set), sdktest.StatefulSet("web", 3, sdktest.Retention("Delete", "")))

	pv := &corev1.PersistentVolume{
		ObjectMeta: meta("pv-1", ""),
		Spec: corev1.PersistentVolumeSpec{Capacity: gi, AccessModes: rwo, VolumeMode: &fs,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
	require.Equal(t, snapshot.ProjectVolume(pv),
		sdktest.PersistentVolume("pv-1", sdktest.CSI("d", "h"), sdktest.ReclaimPolicy("")))

	sc := &storagev1.StorageClass{ObjectMeta: meta("fast", ""), Provisioner: "p"}
	require.Equal(t, snapshot.ProjectStorageClass(sc), sdktest.StorageClass("fast", "p"))
}
