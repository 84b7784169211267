package faults

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestStranded: only a live, scheduled pod of a StatefulSet, mounting the
// claim, that the workload did not read when it deleted the replica and not
// created before the claim's deletion, is one the workload may delete; the
// pod that was there before, the one the workload read, a pod being
// deleted, a pod of no set, a pod on another claim and an unscheduled pod
// (which pvc-protection does not count) are left alone.
func TestStranded(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 11, 27, 20, 7, 28, 0, time.UTC))
	cl := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-s0-1", DeletionTimestamp: &deleted}}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s0", UID: "set-uid"}}
	setRef := *metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	pod := func(name string, created time.Duration, claim string, owned, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"), CreationTimestamp: metav1.NewTime(deleted.Add(created))},
			Spec: corev1.PodSpec{NodeName: "node", Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
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
	unscheduled := pod("unscheduled", 12*time.Second, "data-s0-1", true, false)
	unscheduled.Spec.NodeName = ""
	pods = append(pods, unscheduled)
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
// answered or while no host served until the deletion, is one the workload
// may delete.
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
	// A host ran throughout, one slot restarted 3 s before the deletion.
	up := hostLives{{{from: deletedAt.Add(-time.Minute), served: deletedAt.Add(-time.Minute)}}, {{from: deletedAt.Add(-time.Minute), served: deletedAt.Add(-time.Minute), to: deletedAt.Add(-5 * time.Second)}, {from: deletedAt.Add(-3 * time.Second), served: deletedAt.Add(-3 * time.Second)}}}
	later := deletedAt.Add(2 * time.Second)
	require.Equal(t, createdAfter, bornOrphan(claim(later, false), set, up, birthUnknown))
	require.Equal(t, notOrphan, bornOrphan(claim(deletedAt.Add(100*time.Millisecond), false), set, up, birthUnknown), "created in the second of the deletion")
	require.Equal(t, notOrphan, bornOrphan(claim(deletedAt.Add(-time.Second), false), set, up, birthUnknown), "created before the deletion")
	require.Equal(t, notOrphan, bornOrphan(claim(later, true), set, up, birthUnknown), "owned")
	retain := set
	retain.spec.whenDeleted = "Retain"
	require.Equal(t, notOrphan, bornOrphan(claim(later, false), retain, up, birthUnknown), "whenDeleted=Retain keeps it")
	live := set
	live.deleted = false
	require.Equal(t, notOrphan, bornOrphan(claim(later, false), live, up, birthUnknown), "set not deleted")

	// Seed 2431: the only host killed 13 s before the deletion, the next
	// started 240 ms after it; the claim created in the deletion's second.
	down := hostLives{{{from: deletedAt.Add(-time.Minute), served: deletedAt.Add(-time.Minute), to: deletedAt.Add(-13 * time.Second)}, {from: deletedAt.Add(240 * time.Millisecond), served: deletedAt.Add(240 * time.Millisecond)}}}
	require.Equal(t, createdUnserved, bornOrphan(claim(deletedAt.Add(-100*time.Millisecond), false), set, down, birthUnknown))
	require.Equal(t, createdUnserved, bornOrphan(claim(deletedAt.Add(-10*time.Second), false), set, down, birthUnknown), "created while the host was down")
	require.Equal(t, notOrphan, bornOrphan(claim(deletedAt.Add(-14*time.Second), false), set, down, birthUnknown), "created while the host ran: it could have stamped it")
	require.Equal(t, notOrphan, bornOrphan(claim(deletedAt.Add(-100*time.Millisecond), true), set, down, birthUnknown), "owned")
	// A host that started within the claim's second could have served it.
	early := hostLives{{{from: deletedAt.Add(-time.Minute), served: deletedAt.Add(-time.Minute), to: deletedAt.Add(-13 * time.Second)}, {from: deletedAt.Add(-500 * time.Millisecond), served: deletedAt.Add(-500 * time.Millisecond)}}}
	require.Equal(t, notOrphan, bornOrphan(claim(deletedAt.Add(-100*time.Millisecond), false), set, early, birthUnknown))

	// Seed 2419: a claim created in the second of the deletion, while a
	// host ran. Where etcd places it decides, not the timestamp.
	same := claim(deletedAt.Add(100*time.Millisecond), false)
	require.Equal(t, createdAfter, bornOrphan(same, set, up, bornAfter))
	require.Equal(t, notOrphan, bornOrphan(same, set, up, bornBefore), "created while the set existed and a host ran")
	require.Equal(t, createdUnserved, bornOrphan(same, set, down, bornBefore), "created while the set existed and no host ran")
	require.Equal(t, notOrphan, bornOrphan(claim(later, false), set, up, bornBefore), "etcd over the timestamp")
	require.Equal(t, notOrphan, bornOrphan(claim(later, true), set, up, bornAfter), "owned")

	// Seed 2411: both hosts' processes ran, neither yet served: their
	// caches were syncing after an API server restart, the claim created
	// 120 ms after the new server answered.
	syncing := hostLives{{{from: deletedAt.Add(-7 * time.Second), served: deletedAt.Add(500 * time.Millisecond)}}, {{from: deletedAt.Add(-5 * time.Second)}}}
	require.Equal(t, createdUnserved, bornOrphan(same, set, syncing, bornBefore))
	syncing[1][0].served = deletedAt.Add(-time.Second)
	require.Equal(t, notOrphan, bornOrphan(same, set, syncing, bornBefore), "one host served")
}

// TestServingSince: when a host began to serve, from its log.
func TestServingSince(t *testing.T) {
	log := `time=2026-11-28T03:36:29.481Z level=INFO msg="loaded module" module=retention
time=2026-11-28T03:36:29.684Z level=INFO msg="serving admission webhooks" addr=127.0.0.1:42755 modules=2
time=2026-11-28T03:36:29.684Z level=INFO msg="caches synced; host ready" modules=3
`
	require.Equal(t, time.Date(2026, 11, 28, 3, 36, 29, 684_000_000, time.UTC), servingSince(log))
	require.True(t, servingSince(log[:strings.Index(log, "\ntime=")+1]).IsZero(), "not serving yet")
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

// TestByHost: a quiet-window write is a host's when its field manager is
// kubeplug's or unknown; kube-controller-manager's (the test binary's name,
// in process) and the stand-ins' are others'.
func TestByHost(t *testing.T) {
	require.True(t, byHost("MODIFIED event s0.18ec0ece4ee08f20 (kubeplug) [Normal ClaimUpdating ×2: updating claim]"))
	require.True(t, byHost("MODIFIED volumeclaimupdate s0 (kubeplug)"))
	require.True(t, byHost("ADDED claim data-s0-0"), "no field manager: not known to be someone else's")
	require.True(t, byHost("ADDED claim data-s0-0 (kubeplug"), "cut short")
	require.False(t, byHost("MODIFIED event s0.18ec10c26bc717c0 (faults.test) [Warning FailedCreate ×12: create Pod s0-2]"))
	require.False(t, byHost("MODIFIED claim data-s0-1 (kubeplug-e2e-resizer)"))
}

// TestPodsOf: a set's pods are named after its replicas, and owned or not;
// another set's, with a name sharing the prefix, are not its.
func TestPodsOf(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s3", UID: "set-uid"}}
	ref := *metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	at := metav1.NewTime(time.Date(2026, 11, 28, 8, 32, 44, 0, time.UTC))
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "s3-0", OwnerReferences: []metav1.OwnerReference{ref}, CreationTimestamp: at},
			Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		{ObjectMeta: metav1.ObjectMeta{Name: "s3-1", CreationTimestamp: at}, Status: corev1.PodStatus{Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "no claim"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "s33-0"}},
	}
	require.Equal(t, `s3-0 (Running, ready false, node "n", owned true, created 08:32:44), s3-1 (Pending, ready false, node "", owned false, created 08:32:44, no claim)`, podsOf(pods, set))
	require.Equal(t, "none", podsOf(nil, set))
}
