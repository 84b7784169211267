package policy

import (
	"slices"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// story runs the cluster to its end as the cluster would: after each
// reconcile the resizer grows what the claims ask for and the StatefulSet
// controller rolls the pods the partition allows. It returns the claims
// applied and the partitions set, in order.
func (c *cluster) story(t *testing.T, h *sdktest.Harness, check func(o outcome)) (applied []string, partitions []int32, events []string) {
	t.Helper()
	for round := 0; round < 30; round++ {
		o := c.reconcile(t, h)
		if check != nil {
			check(o)
		}
		applied = append(applied, o.applied()...)
		partitions = append(partitions, o.partitions...)
		events = append(events, o.reasons()...)
		if len(o.actions) == 0 {
			return applied, partitions, events
		}
		c.resize()
		c.roll()
	}
	t.Fatal("no steady state after 30 rounds")
	return nil, nil, nil
}

// TestLockStepStory is KEP-4650's story 1: batch expansion with InPlace and
// LockStep while the pod template changes. Each replica's claim grows before
// its pod rolls, highest ordinal first, and the partition ends where the
// user had it.
func TestLockStepStory(t *testing.T) {
	for _, user := range []*int32{nil, ptr(int32(0)), ptr(int32(1))} {
		name := "no partition"
		if user != nil {
			name = "partition " + itoa(*user)
		}
		t.Run(name, func(t *testing.T) {
			h := sdktest.New(t)
			c := newCluster(3, "InPlace", "LockStep", "2Gi")
			if user != nil {
				c.setPartition(*user)
			}
			c.set.Status.UpdateRevision = newRev
			check := func(o outcome) {
				for _, a := range o.applies {
					i := int(a.Target.Name[len(a.Target.Name)-1] - '0')
					if i+1 < 3 && c.pod(i + 1).Metadata.Labels["controller-revision-hash"] != newRev {
						t.Errorf("claim %s applied before pod web-%d rolled", a.Target.Name, i+1)
					}
					if p := c.partition(); p == nil || *p != int32(i+1) {
						t.Errorf("claim %s applied while partition is %v, want %d", a.Target.Name, p, i+1)
					}
				}
			}
			applied, partitions, events := c.story(t, h, check)
			u := int32(0)
			if user != nil {
				u = *user
			}
			var wantApplied []string
			var wantPartitions []int32
			for i := int32(2); i >= u; i-- {
				wantApplied = append(wantApplied, "data-web-"+itoa(i))
				wantPartitions = append(wantPartitions, i+1)
			}
			wantPartitions = append(wantPartitions, u)
			if !slices.Equal(applied, wantApplied) {
				t.Errorf("applied %v, want %v", applied, wantApplied)
			}
			if !slices.Equal(partitions, wantPartitions) {
				t.Errorf("partitions %v, want %v", partitions, wantPartitions)
			}
			if p := c.partition(); p == nil || *p != u {
				t.Errorf("partition ends at %v, want %d", p, u)
			}
			if c.vcu.Status.HeldPartition != nil || c.vcu.Status.UserPartition != nil {
				t.Errorf("hold not cleared: %+v", c.vcu.Status)
			}
			if n := count(events, ReasonPartitionReleased); n != 1 {
				t.Errorf("%d PartitionReleased events, want 1: %v", n, events)
			}
			if n := count(events, ReasonPartitionHeld); n != len(wantApplied) {
				t.Errorf("%d PartitionHeld events, want %d: %v", n, len(wantApplied), events)
			}
			c.steady(t, h)
		})
	}
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestRolloutWaits: the next replica starts only when this one's claims are
// compatible, and under LockStep only when its pod is at the update revision
// and Ready.
func TestRolloutWaits(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(3, "InPlace", "LockStep", "2Gi")
	c.set.Status.UpdateRevision = newRev
	if got := c.reconcile(t, h).applied(); !slices.Equal(got, []string{"data-web-2"}) {
		t.Fatalf("first round applied %v", got)
	}
	// The resizer has not acted: the claim is in flight.
	if got := c.reconcile(t, h).applied(); len(got) != 0 {
		t.Fatalf("applied %v while data-web-2 is in flight", got)
	}
	c.wantCondition(t, ConditionProgressing, "True", ReasonClaimsUpdating)
	c.resize()
	// Compatible now, but the pod is still at the old revision.
	o := c.reconcile(t, h)
	if len(o.applies) != 0 {
		t.Fatalf("applied %v before pod web-2 rolled", o.applied())
	}
	if p := c.partition(); *p != 2 {
		t.Fatalf("partition %d, want 2 (web-2 may roll)", *p)
	}
	c.wantCondition(t, ConditionProgressing, "True", ReasonWaitingForPodRollout)
	c.pod(2).Metadata.Labels["controller-revision-hash"] = newRev
	c.pod(2).Status.Conditions = []abi.Condition{{Type: "Ready", Status: "False"}}
	if got := c.reconcile(t, h).applied(); len(got) != 0 {
		t.Fatalf("applied %v while pod web-2 is not Ready", got)
	}
	c.pod(2).Status.Conditions = []abi.Condition{{Type: "Ready", Status: "True"}}
	if got := c.reconcile(t, h).applied(); !slices.Equal(got, []string{"data-web-1"}) {
		t.Fatalf("applied %v once web-2 is ready, want data-web-1", got)
	}
}

// TestAsyncNeverHolds: Async updates one replica at a time, highest first,
// and never touches the partition; the user's partition bounds the walk.
func TestAsyncNeverHolds(t *testing.T) {
	for _, user := range []int32{0, 2} {
		t.Run("partition "+itoa(user), func(t *testing.T) {
			h := sdktest.New(t)
			c := newCluster(3, "InPlace", "Async", "2Gi")
			c.setPartition(user)
			c.set.Status.UpdateRevision = newRev
			applied, partitions, _ := c.story(t, h, func(o outcome) {
				if len(o.applies) > 1 {
					t.Errorf("more than one replica at a time: %v", o.applied())
				}
			})
			var want []string
			for i := int32(2); i >= user; i-- {
				want = append(want, "data-web-"+itoa(i))
			}
			if !slices.Equal(applied, want) || len(partitions) != 0 {
				t.Errorf("applied %v partitions %v, want %v and none", applied, partitions, want)
			}
			if c.vcu.Status.HeldPartition != nil {
				t.Errorf("Async held the partition")
			}
			c.wantCondition(t, ConditionProgressing, "False", ReasonComplete)
			if user > 0 && c.claim("data-web-0").Spec.Resources.Requests["storage"] != "1Gi" {
				t.Errorf("claim below the partition touched")
			}
		})
	}
}

// TestPodOnDelete: with the set's updateStrategy OnDelete a replica's claims
// are updated only when its pod is gone; LockStep does not hold then.
func TestPodOnDelete(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(3, "InPlace", "LockStep", "2Gi")
	c.set.Spec.UpdateStrategy.Type = "OnDelete"
	o := c.reconcile(t, h)
	if len(o.applies) != 0 || len(o.partitions) != 0 {
		t.Fatalf("acted with every pod running: %s", describe(o.actions))
	}
	c.wantCondition(t, ConditionProgressing, "True", ReasonWaitingForPodDeletion)
	c.pods = slices.Delete(c.pods, 1, 2) // the user deleted web-1
	if got := c.reconcile(t, h).applied(); !slices.Equal(got, []string{"data-web-1"}) {
		t.Fatalf("applied %v, want data-web-1", got)
	}
	c.resize()
	c.settle(t, h)
	c.wantCondition(t, ConditionProgressing, "True", ReasonWaitingForPodDeletion)
	if c.vcu.Status.HeldPartition != nil {
		t.Error("LockStep held the partition under pod OnDelete")
	}
	// The user deletes web-2; its expansion fails, and blocks even once the
	// pod is back.
	c.pods = c.pods[:1]
	if got := c.reconcile(t, h).applied(); len(got) != 1 || got[0] != "data-web-2" {
		t.Fatalf("applied %v, want data-web-2", got)
	}
	c.claim("data-web-2").Status.AllocatedResourceStatuses = map[string]string{"storage": "NodeResizeInfeasible"}
	c.pods = append(c.pods, sdktest.Pod(c.set, 2, sdktest.Labels("controller-revision-hash", oldRev)))
	c.settle(t, h)
	c.wantCondition(t, ConditionBlocked, "True", ReasonClaimUpdateFailed)
}

// TestOnDeleteStrategy: volumeClaimUpdateStrategy OnDelete never updates
// in place; what is left waits for recreation.
func TestOnDeleteStrategy(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(3, "OnDelete", "Async", "2Gi")
	o := c.reconcile(t, h)
	if len(o.applies) != 0 || len(o.partitions) != 0 {
		t.Fatalf("OnDelete acted: %s", describe(o.actions))
	}
	c.wantCondition(t, ConditionProgressing, "False", ReasonWaitingForClaimRecreation)
	c.steady(t, h)
}

// TestOrdinalStart: indexes count from spec.ordinals.start, so the hold is
// an index and the first claim grown is the highest ordinal's.
func TestOrdinalStart(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(3, "InPlace", "LockStep", "2Gi")
	c.set.Spec.Ordinals = &abi.StatefulSetOrdinals{Start: 5}
	c.pods, c.claims = nil, nil
	for i := 5; i < 8; i++ {
		c.pods = append(c.pods, sdktest.Pod(c.set, i, sdktest.Labels("controller-revision-hash", oldRev)))
		c.claims = append(c.claims, sdktest.Claim("data", c.set, i))
	}
	o := c.reconcile(t, h)
	if got := o.applied(); len(got) != 1 || got[0] != "data-web-7" || len(o.partitions) != 1 || o.partitions[0] != 3 {
		t.Fatalf("actions %s", describe(o.actions))
	}
}

// TestUnboundClaimWaits: kube-apiserver refuses to change an unbound claim's
// spec, so the rollout waits at a Pending claim rather than sending an apply
// that would fail on every retry, and goes on once it is bound.
func TestUnboundClaimWaits(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(3, "InPlace", "Async", "2Gi")
	c.claim("data-web-2").Status = abi.PersistentVolumeClaimStatus{Phase: "Pending"}
	o := c.reconcile(t, h)
	if got := o.applied(); len(got) != 0 {
		t.Fatalf("applied %v to a Pending claim", got)
	}
	c.wantCondition(t, ConditionProgressing, "True", ReasonClaimsUpdating)
	c.claim("data-web-2").Status = abi.PersistentVolumeClaimStatus{Phase: "Bound", Capacity: map[string]string{"storage": "1Gi"}}
	if got := c.reconcile(t, h).applied(); !slices.Equal(got, []string{"data-web-2"}) {
		t.Fatalf("applied %v once bound, want data-web-2", got)
	}
}
