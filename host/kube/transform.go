package kube

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Slim is the informers' transform (cache.TransformFunc): it drops from each
// object, before the cache stores it, what no reconcile input holds, so that
// a host's memory grows with what modules read rather than with what the
// API server sends.
//
//   - Every kind loses metadata.managedFields, often the largest part of an
//     object, which snapshot's projections never read.
//   - A Pod keeps its metadata, spec.nodeName, the name of each volume with
//     its persistentVolumeClaim source (other sources dropped), and
//     status.phase and status.conditions: what snapshot.ProjectPod reads.
//     Containers, the rest of its spec and status go.
//   - A StatefulSet loses spec.template, which ProjectStatefulSet does not
//     read (its volumeClaimTemplates stay).
//
// Anything else, cache.DeletedFinalStateUnknown included, passes unchanged.
// Slim is idempotent. A projection that starts reading a field dropped here
// must keep it here too: TestSlimKeepsTheSnapshot in this package fails
// otherwise.
func Slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return slimPod(o), nil
	case *appsv1.StatefulSet:
		o.ManagedFields = nil
		o.Spec.Template = corev1.PodTemplateSpec{}
	case *corev1.PersistentVolumeClaim:
		o.ManagedFields = nil
	case *corev1.PersistentVolume:
		o.ManagedFields = nil
	case *storagev1.StorageClass:
		o.ManagedFields = nil
	case *unstructured.Unstructured:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// slimPod returns a new Pod with only what ProjectPod reads of p, so that
// the decoded original, containers and all, can be collected.
func slimPod(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: p.ObjectMeta}
	out.ManagedFields = nil
	out.Spec.NodeName = p.Spec.NodeName
	if len(p.Spec.Volumes) > 0 {
		out.Spec.Volumes = make([]corev1.Volume, len(p.Spec.Volumes))
		for i, v := range p.Spec.Volumes {
			out.Spec.Volumes[i] = corev1.Volume{Name: v.Name}
			out.Spec.Volumes[i].PersistentVolumeClaim = v.PersistentVolumeClaim
		}
	}
	out.Status.Phase = p.Status.Phase
	out.Status.Conditions = p.Status.Conditions
	return out
}
