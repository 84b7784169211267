package testenv

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Namespace creates a namespace for t and returns its name. The name is
// generated from t's name, without the top-level test's for a subtest, so
// that what a failing test leaves behind says where it comes from:
// TestX/scale-down/Delete-Retain gets scale-down-delete-retain-<random>.
func Namespace(t testing.TB, c kubernetes.Interface) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name()) + "-"}}
	got, err := c.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Name
}

// namespacePrefix makes a test's name a valid start of a namespace name (a
// DNS label): lower case, "-" for anything but letters and digits ("_", "/",
// the "#01" of a repeated subtest name), at most 50 characters, which leaves
// room for the API server's random suffix within the limit of 63.
func namespacePrefix(test string) string {
	name := test
	if _, sub, ok := strings.Cut(test, "/"); ok {
		name = sub
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
			return r
		case 'A' <= r && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, name)
	if len(name) > 50 {
		name = name[:50]
	}
	if name = strings.Trim(name, "-"); name == "" {
		return "test"
	}
	return name
}

// Events lists the events of namespace ns with the given reason.
func Events(t testing.TB, c kubernetes.Interface, ns, reason string) []corev1.Event {
	t.Helper()
	list, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}
