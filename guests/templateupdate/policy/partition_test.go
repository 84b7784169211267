package policy

import (
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// TestPartitionSteps checks each LockStep partition step on its own.
func TestPartitionSteps(t *testing.T) {
	h := sdktest.New(t)

	t.Run("the hold and the user's value in one write to the set", func(t *testing.T) {
		c := newCluster(3, "InPlace", "LockStep", "2Gi")
		c.setPartition(1)
		o := c.reconcile(t, h)
		if got := describe(o.actions[:3]); got != "setPartition web; updateClaimUpdateStatus web-data; event web PartitionHeld" {
			t.Fatalf("actions = %s", got)
		}
		if hold := o.actions[0].Hold; hold == nil || hold.UserPartition == nil || *hold.UserPartition != 1 {
			t.Fatalf("setPartition's hold %+v, want the user's 1", hold)
		}
		held, user, ok := sdk.PartitionHoldOf(c.set)
		if !ok || held != 3 || user == nil || *user != 1 {
			t.Errorf("the set's record: held %d user %v ok %v, want 3 1", held, user, ok)
		}
		st := c.vcu.Status
		if *st.HeldPartition != 3 || *st.UserPartition != 1 {
			t.Errorf("status: held %d user %d, want 3 1", *st.HeldPartition, *st.UserPartition)
		}
	})

	t.Run("a status lost after the set's write: the set's record holds", func(t *testing.T) {
		c := newCluster(3, "InPlace", "LockStep", "2Gi")
		c.setPartition(1)
		before := c.vcu.Status
		c.reconcile(t, h)
		c.vcu.Status = before // the host stopped between the two writes
		o := c.reconcile(t, h)
		if len(o.partitions) != 0 || *c.vcu.Status.HeldPartition != 3 || *c.vcu.Status.UserPartition != 1 {
			t.Fatalf("actions %s status %+v, want the status written from the set's record", describe(o.actions), c.vcu.Status)
		}
	})

	t.Run("the VolumeClaimUpdate deleted while it holds: the user's partition back", func(t *testing.T) {
		c := newCluster(3, "InPlace", "LockStep", "2Gi")
		c.setPartition(1)
		c.reconcile(t, h)
		c.vcu = nil
		o := c.reconcile(t, h)
		if got := describe(o.actions); got != "setPartition web; event web PartitionReleased" {
			t.Fatalf("actions = %s", got)
		}
		if *c.partition() != 1 {
			t.Errorf("partition %d, want the user's 1", *c.partition())
		}
		if _, _, ok := sdk.PartitionHoldOf(c.set); ok {
			t.Errorf("the record is still on the set: %v", c.set.Metadata.Annotations)
		}
		c.steady(t, h)
	})

	t.Run("no partition is recorded as none", func(t *testing.T) {
		c := newCluster(3, "InPlace", "LockStep", "2Gi")
		c.reconcile(t, h)
		if c.vcu.Status.UserPartition != nil || *c.vcu.Status.HeldPartition != 3 {
			t.Errorf("status %+v", c.vcu.Status)
		}
	})

	t.Run("steps down without a second PartitionHeld for the same value", func(t *testing.T) {
		c := newCluster(3, "InPlace", "LockStep", "2Gi")
		c.reconcile(t, h)
		o := c.reconcile(t, h) // web-2 in flight: the hold stays
		if len(o.partitions) != 0 || count(o.reasons(), ReasonPartitionHeld) != 0 {
			t.Fatalf("held again: %s", describe(o.actions))
		}
		c.resize()
		o = c.reconcile(t, h)
		if got := describe(o.actions[:3]); got != "setPartition web; updateClaimUpdateStatus web-data; event web PartitionHeld" {
			t.Fatalf("step down moves the partition before the status says so: %s", got)
		}
		if len(o.partitions) != 1 || o.partitions[0] != 2 || count(o.reasons(), ReasonPartitionHeld) != 1 {
			t.Fatalf("step down: %s", describe(o.actions))
		}
		// The set's write failed after all (the partition and its record
		// together), and the status the next reconcile: it tries again.
		c.setPartition(3)
		c.recordHold(3, &abi.PartitionHold{})
		c.vcu.Status.HeldPartition = ptr(int32(3))
		o = c.reconcile(t, h)
		if len(o.partitions) != 1 || o.partitions[0] != 2 || c.vcu.Status.UserPartition != nil {
			t.Fatalf("retry after a failed step down: %s, status %+v", describe(o.actions), c.vcu.Status)
		}
	})

	t.Run("release to the user's value", func(t *testing.T) {
		c := newCluster(3, "InPlace", "LockStep", "2Gi")
		c.setPartition(1)
		c.reconcile(t, h)
		for _, x := range c.claims {
			x.Spec.Resources.Requests["storage"] = "2Gi"
		}
		c.resize()
		o := c.reconcile(t, h)
		if got := describe(o.actions); got != "setPartition web; event web PartitionReleased; updateClaimUpdateStatus web-data" {
			t.Fatalf("actions = %s", got)
		}
		if *c.partition() != 1 || c.vcu.Status.HeldPartition != nil || c.vcu.Status.UserPartition != nil {
			t.Errorf("partition %d status %+v", *c.partition(), c.vcu.Status)
		}
		if _, _, ok := sdk.PartitionHoldOf(c.set); ok {
			t.Errorf("the record is still on the set: %v", c.set.Metadata.Annotations)
		}
		c.steady(t, h)
	})

	t.Run("user changed the partition while held: held again, the new value recorded", func(t *testing.T) {
		c := newCluster(3, "InPlace", "LockStep", "2Gi")
		c.reconcile(t, h)
		c.setPartition(2)
		o := c.reconcile(t, h)
		if len(o.partitions) != 1 || o.partitions[0] != 3 || *c.vcu.Status.UserPartition != 2 {
			t.Fatalf("actions %s status %+v", describe(o.actions), c.vcu.Status)
		}
	})

	t.Run("user moved the partition past every replica: only the record goes", func(t *testing.T) {
		c := newCluster(3, "InPlace", "LockStep", "2Gi")
		c.reconcile(t, h)
		c.setPartition(5)
		o := c.reconcile(t, h)
		if len(o.partitions) != 1 || o.partitions[0] != 5 || count(o.reasons(), ReasonPartitionReleased) != 1 || c.vcu.Status.HeldPartition != nil {
			t.Fatalf("actions %s status %+v", describe(o.actions), c.vcu.Status)
		}
		if _, _, ok := sdk.PartitionHoldOf(c.set); *c.partition() != 5 || ok {
			t.Errorf("partition %d, record %v: want the user's 5 and no record", *c.partition(), c.set.Metadata.Annotations)
		}
		c.steady(t, h)
	})

	t.Run("Async never holds", func(t *testing.T) {
		c := newCluster(3, "InPlace", "Async", "2Gi")
		o := c.reconcile(t, h)
		if len(o.partitions) != 0 || c.vcu.Status.HeldPartition != nil {
			t.Fatalf("actions %s", describe(o.actions))
		}
	})

	t.Run("switched to Async: released", func(t *testing.T) {
		c := newCluster(3, "InPlace", "LockStep", "2Gi")
		c.reconcile(t, h)
		c.vcu.Spec.VolumeClaimSyncStrategy = "Async"
		c.vcu.Metadata.Generation = 2
		o := c.reconcile(t, h)
		if len(o.partitions) != 1 || o.partitions[0] != 0 || count(o.reasons(), ReasonPartitionReleased) != 1 {
			t.Fatalf("actions %s", describe(o.actions))
		}
		if c.vcu.Status.HeldPartition != nil {
			t.Errorf("status %+v", c.vcu.Status)
		}
	})

	t.Run("LockStep with OnDelete claims holds until the user recreates", func(t *testing.T) {
		c := newCluster(3, "OnDelete", "LockStep", "2Gi")
		o := c.reconcile(t, h)
		if len(o.partitions) != 1 || o.partitions[0] != 3 || len(o.applies) != 0 {
			t.Fatalf("actions %s", describe(o.actions))
		}
		c.wantCondition(t, ConditionProgressing, "Unknown", ReasonBlocked)
		c.wantCondition(t, ConditionBlocked, "True", ReasonClaimNeedsRecreation)
		c.steady(t, h)
	})
}

// TestRecordedUserPartitionNegative: a VolumeClaimUpdate's status is input
// too, and a negative userPartition there (a CRD from before it refused
// one, or a hand edit) is garbage: the module treats it as no partition
// rather than walking replicas below index 0.
func TestRecordedUserPartitionNegative(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(3, "InPlace", "LockStep", "2Gi")
	for _, x := range c.claims {
		x.Spec.Resources.Requests["storage"] = "2Gi"
	}
	c.resize()
	c.setPartition(3)
	c.vcu.Status.HeldPartition = ptr(int32(3))
	c.vcu.Status.UserPartition = ptr(int32(-2))
	o := c.reconcile(t, h)
	if len(o.partitions) != 1 || o.partitions[0] != 0 {
		t.Fatalf("released to %v, want 0: %s", o.partitions, describe(o.actions))
	}
	if c.vcu.Status.HeldPartition != nil || c.vcu.Status.UserPartition != nil {
		t.Errorf("status %+v", c.vcu.Status)
	}
}
