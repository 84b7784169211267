package faults

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestStranded: only a live pod of a StatefulSet, mounting the claim, that
// the workload did not read when it deleted the replica and not created
// before the claim's deletion, is one the workload may delete; the pod that
// was there before, the one the workload read, a pod being deleted, a pod
// of no set and a pod on another claim are left alone.
func TestStranded(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 11, 27, 20, 7, 28, 0, time.UTC))
	cl := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-s0-1", DeletionTimestamp: &deleted}}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s0", UID: "set-uid"}}
	setRef := *metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	pod := func(name string, created time.Duration, claim string, owned, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"), CreationTimestamp: metav1.NewTime(deleted.Add(created))},
			Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
		if owned {
			p.OwnerReferences = []metav1.OwnerReference{setRef}
		}
		if deleting {
			p.DeletionTimestamp = &deleted
		}
		return p
	}
	pods := []corev1.Pod{
		pod("recreated", 12*time.Second, "data-s0-1", true, false),
		pod("before", -time.Second, "data-s0-1", true, false),
		pod("same-second", 0, "data-s0-1", true, false),
		pod("read", 0, "data-s0-1", true, false),
		pod("deleting", 12*time.Second, "data-s0-1", true, true),
		pod("bare", 12*time.Second, "data-s0-1", false, false),
		pod("other-claim", 12*time.Second, "data-s0-2", true, false),
	}
	var got []string
	for _, p := range stranded(pods, cl, []types.UID{"read-uid"}) {
		got = append(got, p.Name)
	}
	if want := []string{"recreated", "same-second"}; !slices.Equal(got, want) {
		t.Errorf("stranded: %v, want %v", got, want)
	}
}

// TestBornOrphan: only an unowned claim of a set deleted with
// whenDeleted=Delete, created in a later second than the deletion was
// answered, is one the workload may delete.
func TestBornOrphan(t *testing.T) {
	deletedAt := time.Date(2026, 11, 27, 21, 29, 36, 852_000_000, time.UTC)
	set := setRecord{spec: setSpec{whenDeleted: "Delete"}, deleted: true, deletedAt: deletedAt}
	claim := func(created time.Time, owned bool) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-s3-0", CreationTimestamp: metav1.NewTime(created.Truncate(time.Second))}}
		if owned {
			c.OwnerReferences = []metav1.OwnerReference{{Kind: "StatefulSet", Name: "s3", UID: "old"}}
		}
		return c
	}
	later := deletedAt.Add(2 * time.Second)
	require.True(t, bornOrphan(claim(later, false), set))
	require.False(t, bornOrphan(claim(deletedAt.Add(100*time.Millisecond), false), set), "created in the second of the deletion")
	require.False(t, bornOrphan(claim(deletedAt.Add(-time.Second), false), set), "created before the deletion")
	require.False(t, bornOrphan(claim(later, true), set), "owned")
	retain := set
	retain.spec.whenDeleted = "Retain"
	require.False(t, bornOrphan(claim(later, false), retain), "whenDeleted=Retain keeps it")
	live := set
	live.deleted = false
	require.False(t, bornOrphan(claim(later, false), live), "set not deleted")
}

// TestLastManager: the writer named is the entry written last, whatever
// the entries' order, with its subresource.
func TestLastManager(t *testing.T) {
	at := func(s int) *metav1.Time {
		v := metav1.NewTime(time.Date(2026, 11, 27, 22, 18, s, 0, time.UTC))
		return &v
	}
	mf := []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Time: at(40)},
		{Manager: "kubeplug-e2e-resizer", Subresource: "status", Time: at(50)},
		{Manager: "faults.test", Time: at(30)},
		{Manager: "no-time"},
	}
	require.Equal(t, "kubeplug-e2e-resizer, status", lastManager(mf))
	require.Equal(t, "", lastManager(nil))
}
