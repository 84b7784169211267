package livehost

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// protectFinalizer is the finalizer e2e/guests/protect adds to claims.
const protectFinalizer = "e2e.kubeplug.dev/protect"

func client(t testing.TB) kubernetes.Interface {
	t.Helper()
	return cp.Client()
}

// namespace creates a namespace for one test.
func namespace(t testing.TB) string {
	t.Helper()
	return testenv.Namespace(t, client(t))
}

// createSet creates a StatefulSet with one claim template, "data", and the
// claims data-<set>-<i> for i < claims, the way the StatefulSet controller
// would name them (no controller runs here).
func createSet(t testing.TB, ns, name string, claims int) *appsv1.StatefulSet {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr(int32(claims)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claimSpec("data")},
		},
	}
	got, err := client(t).AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range claims {
		c := claimSpec(fmt.Sprintf("data-%s-%d", name, i))
		c.Namespace = ns
		if _, err := client(t).CoreV1().PersistentVolumeClaims(ns).Create(ctx, &c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

func claimSpec(name string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// protected counts the claims of ns that carry the protect finalizer, and
// fails t if one carries it twice.
func protected(t testing.TB, ns string) (n, total int) {
	t.Helper()
	list, err := client(t).CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		k := 0
		for _, f := range c.Finalizers {
			if f == protectFinalizer {
				k++
			}
		}
		if k > 1 {
			t.Fatalf("claim %s/%s carries %s %d times: %v", ns, c.Name, protectFinalizer, k, c.Finalizers)
		}
		n += k
	}
	return n, len(list.Items)
}

// events lists the events of ns with the given reason.
func events(t testing.TB, ns, reason string) []corev1.Event {
	t.Helper()
	return testenv.Events(t, client(t), ns, reason)
}

// guest builds a guest module and returns its path.
func guest(t testing.TB, dir string) string {
	t.Helper()
	p, err := testenv.Guest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// moduleYAML is one entry of a host configuration.
func moduleYAML(path, name, ns, config string) string {
	// Every module these tests run (protect, warnretain) is allowed what
	// its manifest asks.
	s := fmt.Sprintf("- path: %s\n  name: %s\n  namespaces: [%s]\n", path, name, ns) +
		"  allow: [{action: addFinalizer, resources: [persistentvolumeclaims]}, {action: event, resources: [statefulsets]}]\n"
	if config != "" {
		s += "  config: " + config + "\n"
	}
	return s
}

// removeFinalizers lets namespace deletion finish after a test.
func removeFinalizers(t testing.TB, ns string) {
	ctx := context.Background()
	list, err := client(t).CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, c := range list.Items {
		if slices.Contains(c.Finalizers, protectFinalizer) {
			c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == protectFinalizer })
			_, _ = client(t).CoreV1().PersistentVolumeClaims(ns).Update(ctx, &c, metav1.UpdateOptions{})
		}
	}
}

func ptr[T any](v T) *T { return &v }
