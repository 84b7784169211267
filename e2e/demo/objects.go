package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// readSet reads a StatefulSet manifest from examples/demo.
func readSet(root, file string) (*appsv1.StatefulSet, error) {
	b, err := os.ReadFile(filepath.Join(root, "examples", "demo", file))
	if err != nil {
		return nil, err
	}
	var s appsv1.StatefulSet
	if err := yaml.UnmarshalStrict(b, &s); err != nil {
		return nil, fmt.Errorf("examples/demo/%s: %w", file, err)
	}
	return &s, nil
}

func ensureNamespace(ctx context.Context, c kubernetes.Interface, name string) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// eventsFor lists the events on the named object of ns with reason.
func eventsFor(ctx context.Context, c kubernetes.Interface, ns, kind, name, reason string) ([]corev1.Event, error) {
	list, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && (reason == "" || e.Reason == reason) {
			out = append(out, e)
		}
	}
	return out, nil
}
