package setctl

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Owners returns the owner references KEP-1847 asks every claim of one
// replica to carry, as kube-controller-manager writes them (controller
// references, blockOwnerDeletion set):
//
//	whenDeleted/whenScaled   in range      condemned
//	Retain/Retain            none          none
//	Delete/Retain            StatefulSet   StatefulSet
//	Retain/Delete            none          Pod
//	Delete/Delete            StatefulSet   Pod
//
// pod is the replica's pod; it is read only for a condemned replica, whose
// claims then point at it, and must exist then.
func Owners(set *appsv1.StatefulSet, pod *corev1.Pod, condemned bool) []metav1.OwnerReference {
	p := PolicyOf(set)
	switch {
	case condemned && p.WhenScaled == Delete:
		return []metav1.OwnerReference{*metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod"))}
	case p.WhenDeleted == Delete:
		return []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
	}
	return nil
}

// SameOwners reports whether a and b hold the same references, in any order.
func SameOwners(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			if sameRef(x, y) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func sameRef(a, b metav1.OwnerReference) bool {
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		isTrue(a.Controller) == isTrue(b.Controller) && isTrue(a.BlockOwnerDeletion) == isTrue(b.BlockOwnerDeletion)
}

func isTrue(p *bool) bool { return p != nil && *p }
