package setctl_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
)

// TestPolicies checks that the table holds each of the four combinations
// once and that their names, used for subtests and namespaces, tell them
// apart without a "/".
func TestPolicies(t *testing.T) {
	want := map[string]bool{"Delete-Delete": true, "Retain-Delete": true, "Delete-Retain": true, "Retain-Retain": true}
	got := map[string]bool{}
	for _, p := range setctl.Policies() {
		if got[p.Name()] {
			t.Errorf("policy %s listed twice", p)
		}
		got[p.Name()] = true
		if !want[p.Name()] {
			t.Errorf("policy %s named %q, want one of %v", p, p.Name(), want)
		}
	}
	if len(got) != len(want) {
		t.Errorf("policies %v, want %v", got, want)
	}
}

func TestNewStatefulSet(t *testing.T) {
	for _, p := range setctl.Policies() {
		t.Run(p.Name(), func(t *testing.T) {
			set := setctl.NewStatefulSet("ns", "web", "data", p, 3)
			if set.Namespace != "ns" || set.Name != "web" {
				t.Errorf("set %s/%s, want ns/web", set.Namespace, set.Name)
			}
			if got := setctl.PolicyOf(set); got != p {
				t.Errorf("policy %s, want %s", got, p)
			}
			if start, end := setctl.Range(set); start != 0 || end != 3 {
				t.Errorf("ordinals [%d, %d), want [0, 3)", start, end)
			}
			// OrderedReady would wait forever for a pod no kubelet runs.
			if set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
				t.Errorf("podManagementPolicy %s, want Parallel", set.Spec.PodManagementPolicy)
			}
			if n := len(set.Spec.VolumeClaimTemplates); n != 1 || set.Spec.VolumeClaimTemplates[0].Name != "data" {
				t.Fatalf("claim templates %v, want one named data", set.Spec.VolumeClaimTemplates)
			}
			if _, ok := set.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
				t.Error("the claim template requests no storage; the API server would reject its claims")
			}
			sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			if !sel.Matches(labels.Set(set.Spec.Template.Labels)) {
				t.Errorf("selector %s does not select the pod template's labels %v; the API server would reject the set", sel, set.Spec.Template.Labels)
			}
		})
	}
}
