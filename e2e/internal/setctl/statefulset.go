package setctl

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NewStatefulSet returns, without creating it, the StatefulSet ns/name of
// replicas pods with policy p and one claim template, template (1Gi,
// ReadWriteOnce), whose claims are therefore <template>-<name>-<ordinal>.
//
// Its podManagementPolicy is Parallel: with no kubelet no pod ever becomes
// Ready, and under OrderedReady kube-controller-manager would wait for pod
// 0 forever, and the retention module, like upstream, would reach condemned
// claims only once every pod in range is Running and Ready. Tests that run
// the kubelet stand-in (internal/kubelet) set OrderedReady themselves.
func NewStatefulSet(ns, name, template string, p Policy, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: template},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
			PersistentVolumeClaimRetentionPolicy: p.Spec(),
		},
	}
}
