package snapshot_test

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// template is a volume claim template: a name and an optional class.
type template struct {
	name  string
	class *string
}

func newSet(ns, name string, replicas *int32, start int32, templates ...template) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)},
		Spec:       appsv1.StatefulSetSpec{Replicas: replicas},
	}
	if start != 0 {
		s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: start}
	}
	for _, t := range templates {
		s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: t.name},
			Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: t.class},
		})
	}
	return s
}

// newPod returns a pod whose controller (when ownerUID is set) is the
// StatefulSet with that UID.
func newPod(ns, name string, ownerUID types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
	if ownerUID != "" {
		p.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "StatefulSet", Name: "owner", UID: ownerUID, Controller: new(true),
		}}
	}
	return p
}

func newClaim(ns, name string, class *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: class},
	}
}

func newClass(name string) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}, Provisioner: "p"}
}

func newVolume(name string, claimRef *corev1.ObjectReference, class string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PersistentVolumeSpec{ClaimRef: claimRef, StorageClassName: class},
	}
}
