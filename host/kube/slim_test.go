package kube_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeplug/kubeplug/host/kube"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// TestSlimKeepsTheSnapshot: what a module sees of an object is the same
// whether the cache stored it whole or slimmed, and slimming twice changes
// nothing more.
func TestSlimKeepsTheSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name    string
		obj     func() any
		project func(any) any
	}{
		{"pod", func() any { return richPod() }, func(o any) any { return snapshot.ProjectPod(o.(*corev1.Pod)) }},
		{"statefulset", func() any { return richSet() }, func(o any) any { return snapshot.ProjectStatefulSet(o.(*appsv1.StatefulSet)) }},
		{"claim", func() any { return richClaim("data-web-0") }, func(o any) any { return snapshot.ProjectClaim(o.(*corev1.PersistentVolumeClaim)) }},
		{"volume", func() any { return richVolume() }, func(o any) any { return snapshot.ProjectVolume(o.(*corev1.PersistentVolume)) }},
		{"storageclass", func() any { return richClass() }, func(o any) any { return snapshot.ProjectStorageClass(o.(*storagev1.StorageClass)) }},
		{"volumeclaimupdate", func() any { return richUpdate() }, func(o any) any {
			u, err := snapshot.ProjectClaimUpdate(o.(*unstructured.Unstructured))
			require.NoError(t, err)
			return u
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.project(tc.obj())
			once, err := kube.Slim(tc.obj())
			require.NoError(t, err)
			require.Equal(t, want, tc.project(once))
			require.Empty(t, once.(metav1.Object).GetManagedFields(), "managed fields are dropped")
			twice, err := kube.Slim(once)
			require.NoError(t, err)
			require.Equal(t, once, twice)
		})
	}
}

func TestSlimDropsWhatNoModuleReads(t *testing.T) {
	p, err := kube.Slim(richPod())
	require.NoError(t, err)
	pod := p.(*corev1.Pod)
	require.Empty(t, pod.Spec.Containers)
	require.Nil(t, pod.Spec.Volumes[1].ConfigMap, "a volume keeps only its claim source")
	require.Empty(t, pod.Status.ContainerStatuses)

	s, err := kube.Slim(richSet())
	require.NoError(t, err)
	require.Empty(t, s.(*appsv1.StatefulSet).Spec.Template.Spec.Containers)
	require.Len(t, s.(*appsv1.StatefulSet).Spec.VolumeClaimTemplates, 2)

	tomb := cache.DeletedFinalStateUnknown{Key: "default/web-0", Obj: richPod()}
	got, err := kube.Slim(tomb)
	require.NoError(t, err)
	require.Equal(t, tomb, got, "a tombstone passes unchanged")
}

var managed = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
	FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}}}

func meta(ns, name string) metav1.ObjectMeta {
	yes := true
	now := metav1.Unix(1700000000, 0)
	return metav1.ObjectMeta{
		Namespace: ns, Name: name, UID: "uid-" + "name", ResourceVersion: "42", Generation: 3,
		CreationTimestamp: now, DeletionTimestamp: &now,
		Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"},
		Finalizers: []string{"f"}, ManagedFields: managed,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: &yes}},
	}
}

func richPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: meta("default", "web-0"),
		Spec: corev1.PodSpec{
			NodeName:   "node-1",
			Containers: []corev1.Container{{Name: "db", Image: "postgres", Args: []string{"-c", "x"}}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0", ReadOnly: true}}},
				{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
			},
		},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, Reason: "r", Message: "m", LastTransitionTime: metav1.Unix(1700000001, 0), ObservedGeneration: 2}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "db", Ready: true, Image: "postgres"}},
			PodIP:             "10.0.0.1",
		},
	}
}

func richSet() *appsv1.StatefulSet {
	replicas, partition := int32(3), int32(1)
	class := "fast"
	return &appsv1.StatefulSet{
		ObjectMeta: meta("default", "web"),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			Ordinals:            &appsv1.StatefulSetOrdinals{Start: 2},
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			ServiceName:         "web",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &partition}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "postgres"}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{
				{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class}},
				{ObjectMeta: metav1.ObjectMeta{Name: "logs"}},
			},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType},
		},
		Status: appsv1.StatefulSetStatus{Replicas: 3, ReadyReplicas: 2, CurrentRevision: "r1", UpdateRevision: "r2"},
	}
}

func richClaim(name string) *corev1.PersistentVolumeClaim {
	class := "fast"
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: meta("default", name),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			VolumeName:       "pv-1",
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Conditions: []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue}}},
	}
	return c
}

func richVolume() *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: meta("", "pv-1"),
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Namespace: "default", Name: "data-web-0", UID: "c"},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
}

func richClass() *storagev1.StorageClass {
	del := corev1.PersistentVolumeReclaimDelete
	return &storagev1.StorageClass{ObjectMeta: meta("", "fast"), Provisioner: "d", ReclaimPolicy: &del, Parameters: map[string]string{"type": "ssd"}}
}

func richUpdate() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeplug.dev/v1alpha1", "kind": "VolumeClaimUpdate",
		"metadata": map[string]any{"namespace": "default", "name": "grow", "uid": "u1",
			"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Apply"}}},
		"spec": map[string]any{"statefulSetName": "web"},
	}}
	return u
}
