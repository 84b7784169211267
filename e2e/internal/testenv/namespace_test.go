package testenv_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// named is t under another name: Namespace names what it creates after it.
type named struct {
	testing.TB
	name string
}

func (n named) Name() string { return n.name }

func TestNamespace(t *testing.T) {
	for _, tc := range []struct {
		test, prefix string
	}{
		{"TestMetricsAndReadiness", "testmetricsandreadiness-"},
		{"TestRetentionAlone/lifecycle/Delete-Retain", "lifecycle-delete-retain-"},
		{"TestRetentionBesideKCM/scenarios/scale-down/Retain-Delete", "scenarios-scale-down-retain-delete-"},
		{"TestX/with_space#01", "with-space-01-"},
		{"TestX/" + strings.Repeat("a", 60), strings.Repeat("a", 50) + "-"},
		{"TestX/" + strings.Repeat("a", 49) + "_b", strings.Repeat("a", 49) + "-"},
		{"TestX/__", "test-"},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			c := fake.NewClientset()
			// The fake API server does not generate names; this one adds a
			// suffix as long as the real one's.
			c.PrependReactor("create", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
				ns := a.(k8stesting.CreateAction).GetObject().(*corev1.Namespace).DeepCopy()
				if ns.GenerateName != tc.prefix {
					t.Errorf("generateName %q, want %q", ns.GenerateName, tc.prefix)
				}
				ns.Name = ns.GenerateName + "x7k2q"
				return true, ns, nil
			})
			got := testenv.Namespace(named{t, tc.test}, c)
			if got != tc.prefix+"x7k2q" {
				t.Errorf("Namespace = %q, want %q", got, tc.prefix+"x7k2q")
			}
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Errorf("Namespace = %q, not a valid namespace name: %v", got, errs)
			}
		})
	}
}
