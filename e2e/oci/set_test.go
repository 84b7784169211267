package oci

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statefulSet is a StatefulSet of pause pods with one claim template.
func statefulSet(ns, name string, labels map[string]string, replicas int32, template corev1.PersistentVolumeClaim) *appsv1.StatefulSet {
	template.Namespace = ""
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{template},
		},
	}
}
