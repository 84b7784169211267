package workload

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/memcluster"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// StatefulSet builds the reconcile input for one StatefulSet with
// `replicas` pods and claims, shaped like what the StatefulSet controller and
// kubelet leave behind (policy Delete/Delete, no owner references on the
// claims yet), through the host's own snapshot builder.
func StatefulSet(tb testing.TB, replicas int) *abi.ReconcileRequest {
	tb.Helper()
	c := memcluster.New(memcluster.Config{})
	class := "fast"
	n := int32(replicas)
	set := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "set-uid", Labels: map[string]string{"app": "web", "tier": "db"}},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &n,
			ServiceName: "web",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &class,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
				},
			}},
		},
		Status: appsv1.StatefulSetStatus{Replicas: n, ReadyReplicas: n, CurrentRevision: "web-6d4b8c", UpdateRevision: "web-6d4b8c"},
	}
	objs := []runtime.Object{set, &storagev1.StorageClass{
		TypeMeta:    metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
		ObjectMeta:  metav1.ObjectMeta{Name: class},
		Provisioner: "hostpath.csi.k8s.io",
	}}
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for i := 0; i < replicas; i++ {
		pod := fmt.Sprintf("web-%d", i)
		claim := fmt.Sprintf("data-web-%d", i)
		objs = append(objs, &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{
				Name: pod, Namespace: "default", UID: types.UID(pod + "-uid"), CreationTimestamp: now,
				Labels: map[string]string{
					"app": "web", "controller-revision-hash": "web-6d4b8c",
					"statefulset.kubernetes.io/pod-name": pod, "apps.kubernetes.io/pod-index": fmt.Sprint(i),
				},
				Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))},
			},
			Spec: corev1.PodSpec{
				NodeName: fmt.Sprintf("node-%d", i%3),
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
				Containers: []corev1.Container{{Name: "db", Image: "example/db:1"}},
			},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			}},
		}, &corev1.PersistentVolumeClaim{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{
				Name: claim, Namespace: "default", UID: types.UID(claim + "-uid"), CreationTimestamp: now,
				Labels:      map[string]string{"app": "web"},
				Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes", "volume.kubernetes.io/storage-provisioner": "hostpath.csi.k8s.io"},
				Finalizers:  []string{"kubernetes.io/pvc-protection"},
			},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &class,
				VolumeName:       "pvc-" + claim,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
			},
			Status: corev1.PersistentVolumeClaimStatus{
				Phase:       corev1.ClaimBound,
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			},
		})
	}
	for _, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			tb.Fatal(err)
		}
		if err := c.Load(u); err != nil {
			tb.Fatal(err)
		}
	}
	b := snapshot.Builder{Lister: c, Now: func() time.Time { return now.Time }}
	req, err := b.StatefulSet("default/web", nil)
	if err != nil || req == nil {
		tb.Fatalf("build request: %v (nil request: %v)", err, req == nil)
	}
	if len(req.StatefulSet.Pods) != replicas || len(req.StatefulSet.Claims) != replicas {
		tb.Fatalf("request holds %d pods and %d claims, want %d each", len(req.StatefulSet.Pods), len(req.StatefulSet.Claims), replicas)
	}
	return req
}
