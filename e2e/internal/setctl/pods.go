package setctl

import (
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels the StatefulSet controller puts on its pods.
const (
	podNameLabel  = "statefulset.kubernetes.io/pod-name"
	podIndexLabel = "apps.kubernetes.io/pod-index"
)

// newPod is the pod of ordinal as the StatefulSet controller makes it: the
// template's labels and spec, a controller reference to the set with
// blockOwnerDeletion, the identity labels, and a volume for each claim
// template naming that ordinal's claim.
func newPod(set *appsv1.StatefulSet, ordinal int32) *corev1.Pod {
	name := PodName(set.Name, ordinal)
	labels := maps.Clone(set.Spec.Template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[podNameLabel] = name
	labels[podIndexLabel] = strconv.Itoa(int(ordinal))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       set.Namespace,
			Labels:          labels,
			Annotations:     maps.Clone(set.Spec.Template.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))},
		},
		Spec: *set.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = set.Spec.ServiceName
	for _, t := range set.Spec.VolumeClaimTemplates {
		v := corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(t.Name, set.Name, ordinal)},
		}}
		replaced := false
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == t.Name {
				pod.Spec.Volumes[i], replaced = v, true
			}
		}
		if !replaced {
			pod.Spec.Volumes = append(pod.Spec.Volumes, v)
		}
	}
	return pod
}

// newClaim is the claim of template for ordinal as the StatefulSet
// controller makes it: the template with the set's selector labels added,
// and no owner references.
func newClaim(set *appsv1.StatefulSet, template *corev1.PersistentVolumeClaim, ordinal int32) *corev1.PersistentVolumeClaim {
	c := template.DeepCopy()
	c.ObjectMeta = metav1.ObjectMeta{
		Name:        ClaimName(template.Name, set.Name, ordinal),
		Namespace:   set.Namespace,
		Labels:      maps.Clone(template.Labels),
		Annotations: maps.Clone(template.Annotations),
	}
	if set.Spec.Selector != nil && len(set.Spec.Selector.MatchLabels) > 0 {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		maps.Copy(c.Labels, set.Spec.Selector.MatchLabels)
	}
	c.Status = corev1.PersistentVolumeClaimStatus{}
	return c
}
