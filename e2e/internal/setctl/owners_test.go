package setctl_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
)

// TestOwners pins the expectation both retention test packages rely on to
// the proposal's table: which controller reference a claim carries, by
// policy, in range and condemned.
func TestOwners(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "set-uid"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", UID: "pod-uid"}}
	for _, tc := range []struct {
		policy             *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy
		inRange, condemned string
	}{
		{nil, "", ""},
		{&appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}, "", ""},
		{&appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: setctl.Retain, WhenScaled: setctl.Retain}, "", ""},
		{&appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: setctl.Delete, WhenScaled: setctl.Retain}, "set-uid", "set-uid"},
		{&appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: setctl.Retain, WhenScaled: setctl.Delete}, "", "pod-uid"},
		{&appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: setctl.Delete, WhenScaled: setctl.Delete}, "set-uid", "pod-uid"},
		{&appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: setctl.Delete}, "", "pod-uid"},
	} {
		s := set.DeepCopy()
		s.Spec.PersistentVolumeClaimRetentionPolicy = tc.policy
		name := setctl.PolicyOf(s).String()
		for _, c := range []struct {
			condemned bool
			want      string
		}{{false, tc.inRange}, {true, tc.condemned}} {
			got := setctl.Owners(s, pod, c.condemned)
			switch {
			case c.want == "" && len(got) != 0:
				t.Errorf("%s, condemned %v: %v, want no reference", name, c.condemned, got)
			case c.want != "" && (len(got) != 1 || string(got[0].UID) != c.want ||
				got[0].Controller == nil || !*got[0].Controller || got[0].BlockOwnerDeletion == nil || !*got[0].BlockOwnerDeletion):
				t.Errorf("%s, condemned %v: %v, want one controller reference to %s with blockOwnerDeletion", name, c.condemned, got, c.want)
			}
		}
	}
}

// TestSameOwners: order does not matter, any field does.
func TestSameOwners(t *testing.T) {
	yes := true
	a := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "1", Controller: &yes, BlockOwnerDeletion: &yes}
	b := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "2", Controller: &yes}
	notController := a
	notController.Controller = nil
	for _, tc := range []struct {
		name string
		x, y []metav1.OwnerReference
		want bool
	}{
		{"both empty", nil, []metav1.OwnerReference{}, true},
		{"any order", []metav1.OwnerReference{a, b}, []metav1.OwnerReference{b, a}, true},
		{"one missing", []metav1.OwnerReference{a, b}, []metav1.OwnerReference{a}, false},
		{"controller differs", []metav1.OwnerReference{a}, []metav1.OwnerReference{notController}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := setctl.SameOwners(tc.x, tc.y); got != tc.want {
				t.Errorf("SameOwners = %v, want %v", got, tc.want)
			}
		})
	}
}
