package retentionalone

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestRetentionAlone runs the host with the retention module as the only
// implementation of KEP-1847 and checks, subtest by subtest (each in its own
// namespace, all at once), that the garbage collector deletes exactly the
// claims the policy says, and that the host makes exactly the owner-reference
// writes the scenario needs, no more.
func TestRetentionAlone(t *testing.T) {
	testenv.StartModule(t, cp.Kubeconfig, "guests/retention", "retention", 8)

	for _, p := range setctl.Policies() {
		t.Run("lifecycle/"+p.Name(), func(t *testing.T) {
			t.Parallel()
			lifecycle(t, p)
		})
		t.Run("orphan/"+p.Name(), func(t *testing.T) {
			t.Parallel()
			orphan(t, p)
		})
	}
	t.Run("policy-changes", func(t *testing.T) {
		t.Parallel()
		policyChanges(t)
	})
}

// lifecycle: three replicas; scale down to one (condemned claims deleted
// under whenScaled Delete, kept otherwise); scale back up to three (claims
// created anew where they were deleted, reused where kept); delete and
// recreate pod 0, as a rolling update or a drain does (its claim is kept
// under every policy); delete the set (claims deleted under whenDeleted
// Delete, kept otherwise).
func lifecycle(t *testing.T, p setctl.Policy) {
	wd, ws := count(p.WhenDeleted), count(p.WhenScaled)
	e := newEnv(t, p, 3)
	writes := 3 * wd // the set's reference on every claim
	e.awaitWrites(writes)
	before := e.claimUIDs(0, 3)

	e.must(e.s.Scale(e.ctx, 1))
	e.inLine(0, 1)
	if p.WhenScaled == setctl.Delete {
		e.awaitGone(1, 2)
		writes += 2 // a pod reference on each condemned claim
	} else {
		e.kept(1, 2)
	}
	e.awaitWrites(writes)

	e.must(e.s.Scale(e.ctx, 3))
	e.inLine(0, 3)
	if p.WhenScaled == setctl.Retain {
		e.same(before)
	}
	writes += 2 * wd * ws // the set's reference on the two claims created anew
	e.awaitWrites(writes)

	kept := e.claimUIDs(0, 3)
	e.must(e.s.DeletePod(e.ctx, 0))
	e.must(e.s.CreateReplica(e.ctx, 0))
	e.inLine(0, 3)
	e.same(kept)

	e.must(e.s.Delete(e.ctx, ""))
	e.awaitNoPods()
	if p.WhenDeleted == setctl.Delete {
		e.awaitGone(0, 1, 2)
	} else {
		for ord := range int32(3) {
			e.unowned(ord)
		}
		e.same(kept)
	}
	e.awaitWrites(writes)
}

// orphan: deleting the set with propagation Orphan keeps its pods and its
// claims, whatever the policy: the garbage collector removes the set's
// references, and the module writes nothing while the set is being deleted.
func orphan(t *testing.T, p setctl.Policy) {
	e := newEnv(t, p, 2)
	writes := 2 * count(p.WhenDeleted)
	e.awaitWrites(writes)
	kept := e.claimUIDs(0, 2)

	e.must(e.s.Delete(e.ctx, metav1.DeletePropagationOrphan))
	// The garbage collector lets the set go only once it has removed the
	// set's references from every dependent; from then on the claims must
	// stay unowned. A claim owned again, or deleted, means somebody wrote
	// the set's reference back while the set was being deleted.
	testenv.Eventually(t, testenv.Timeout, "set gone, its pods and claims orphaned", func() (bool, error) {
		if _, err := e.s.Get(e.ctx); err == nil {
			return false, nil
		}
		for ord := range int32(2) {
			c := e.claim(ord)
			switch {
			case c == nil:
				return false, fmt.Errorf("claim of ordinal %d was deleted by an orphaning deletion of its set", ord)
			case len(c.OwnerReferences) > 0:
				return false, fmt.Errorf("claim %s still owned by %v after an orphaning deletion of its set: its reference was written back while the set was being deleted", c.Name, c.OwnerReferences)
			}
			pod, err := e.s.Pod(e.ctx, ord)
			if err != nil || pod == nil || len(pod.OwnerReferences) > 0 {
				return false, err
			}
		}
		return true, nil
	})
	e.unowned(0)
	e.unowned(1)
	e.same(kept)
	e.awaitWrites(writes)
}

// policyChanges follows the proposal's "Mutating
// PersistentVolumeClaimRetentionPolicy" on one set, back and forth: to a
// deletion policy the set's references are added, back to Retain they are
// removed, and a scale-down in progress gains or loses its pod references.
func policyChanges(t *testing.T) {
	var (
		rr = setctl.Policy{WhenDeleted: setctl.Retain, WhenScaled: setctl.Retain}
		dr = setctl.Policy{WhenDeleted: setctl.Delete, WhenScaled: setctl.Retain}
		rd = setctl.Policy{WhenDeleted: setctl.Retain, WhenScaled: setctl.Delete}
		dd = setctl.Policy{WhenDeleted: setctl.Delete, WhenScaled: setctl.Delete}
	)
	e := newEnv(t, rr, 3)
	writes := 0
	step := func(p setctl.Policy, from, to int32, n int) {
		t.Helper()
		e.must(e.s.SetPolicy(e.ctx, p))
		e.inLine(from, to)
		writes += n
		e.awaitWrites(writes)
	}

	step(dr, 0, 3, 3) // Retain to a deletion policy: the set's reference on every claim
	step(rr, 0, 3, 3) // and back: removed
	step(rd, 0, 3, 0) // whenScaled Delete: nothing while nothing is condemned

	// A scale-down in progress: replicas lowered, pod 2 not yet deleted.
	e.must(e.s.SetReplicas(e.ctx, 2))
	e.must(e.s.AwaitOwners(e.ctx, 2)) // claim 2 points at its pod
	writes++
	e.awaitWrites(writes)
	step(rr, 0, 3, 1) // to Retain before the pod goes: the pod reference is removed
	e.must(e.s.DeletePod(e.ctx, 2))
	e.unowned(2) // so deleting the pod kept the claim

	// Claim 2's pod is gone: upstream reaches a condemned claim only
	// through its pod, so no policy change touches it any more.
	step(dd, 0, 2, 2)
	step(rr, 0, 2, 2) // had Delete/Delete given claim 2 a reference, Retain would not have removed it
	e.unowned(2)

	step(dd, 0, 2, 2)
	e.must(e.s.Scale(e.ctx, 1)) // claim 1: the set's reference exchanged for its pod's, then the pod deleted
	writes++
	e.awaitGone(1)
	e.unowned(2)
	e.awaitWrites(writes)

	e.must(e.s.Delete(e.ctx, ""))
	e.awaitGone(0)
	e.unowned(2)
	e.awaitWrites(writes)
}

// count is 1 for Delete, 0 for Retain.
func count(v appsv1.PersistentVolumeClaimRetentionPolicyType) int {
	if v == setctl.Delete {
		return 1
	}
	return 0
}

// kept asserts that the claims of ordinals exist with the references the
// set's policy gives a claim in range: a condemned claim whose pod is gone
// keeps them.
func (e *env) kept(ordinals ...int32) {
	e.t.Helper()
	set, err := e.s.Get(e.ctx)
	e.must(err)
	want := setctl.Owners(set, nil, false)
	for _, ord := range ordinals {
		c := e.claim(ord)
		switch {
		case c == nil:
			e.t.Fatalf("claim of ordinal %d in %s is gone; policy %s keeps it", ord, e.ns, setctl.PolicyOf(set))
		case c.DeletionTimestamp != nil || !setctl.SameOwners(c.OwnerReferences, want):
			e.t.Fatalf("claim %s in %s: deletionTimestamp %v, owner references %v; want %v", c.Name, e.ns, c.DeletionTimestamp, c.OwnerReferences, want)
		}
	}
}

// awaitNoPods waits until the garbage collector has deleted the set's pods.
func (e *env) awaitNoPods() {
	e.t.Helper()
	testenv.Eventually(e.t, testenv.Timeout, "pods of "+e.ns+" gone", func() (bool, error) {
		pods, err := e.c.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: "app=" + setName})
		return err == nil && len(pods.Items) == 0, err
	})
}
