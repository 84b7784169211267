package policy

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// The StatefulSet's pod revision does not include the claim templates (they
// live on the VolumeClaimUpdate), so LockStep cannot make
// kube-controller-manager wait for the claims as KEP-4650's "When to update
// PVCs" 1 asks. It holds rollingUpdate.partition instead: pods at indexes at
// or above the partition roll, so holding it just above the highest replica
// whose claims are not compatible lets the rollout reach that replica only
// once they are. The user's own partition is recorded on the
// VolumeClaimUpdate's status and given back when the hold ends.

// userPartition is the user's partition U: the one recorded when the set's
// partition is still the one the module holds, otherwise the set's (the
// user changed it, or the hold never landed). ptr is the value to record:
// nil when the user set none.
// A negative partition in the input (garbage: the API server and the CRD
// refuse one) counts as none, so that no walk goes below index 0.
func userPartition(set *abi.StatefulSet, vcu *abi.VolumeClaimUpdate) (u int32, ptr *int32, holding bool) {
	current := nonNegative(setPartition(set))
	held := vcu.Status.HeldPartition
	if held != nil && current != nil && *current == *held {
		recorded := nonNegative(vcu.Status.UserPartition)
		return deref(recorded), recorded, true
	}
	return deref(current), current, false
}

// nonNegative is p, or nil when p is negative.
func nonNegative(p *int32) *int32 {
	if p != nil && *p < 0 {
		return nil
	}
	return p
}

func setPartition(set *abi.StatefulSet) *int32 {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		return ru.Partition
	}
	return nil
}

// holdAt is the partition LockStep needs, H = 1 + the highest index at or
// above U whose claims are not all compatible; ok is false when no hold is
// needed (Async, pod OnDelete, or every replica from U up compatible).
func (p *plan) holdAt() (h int32, ok bool) {
	if !p.lockStep || !p.rolling {
		return 0, false
	}
	for i := p.replicas - 1; i >= int(p.user); i-- {
		if !p.replicaCompatible(i) {
			return int32(i + 1), true
		}
	}
	return 0, false
}

// partitionActions orders the status write and the partition change so that
// a failure between them never loses the user's value: the status records it
// before the partition is first held, a held partition steps down before the
// status says so, and the partition is given back before the record is
// cleared.
func (p *plan) partitionActions(status abi.VolumeClaimUpdateStatus, writeStatus bool) []abi.Action {
	var out []abi.Action
	setRef, vcuRef := sdk.RefOf(p.set), sdk.RefOf(p.vcu)
	current, oldHeld := setPartition(p.set), p.vcu.Status.HeldPartition
	if h := status.HeldPartition; h != nil {
		move := current == nil || *current != *h
		// A new hold records the user's value before the partition moves. A
		// hold that steps down moves the partition first: the write most
		// likely to fail is the set's (its status changes all through a
		// rollout, and every write has a resourceVersion precondition), and
		// a status that named the new hold while the set kept the old one
		// would read as the user's own change and lose the user's value.
		stepDown := p.holding && move
		if stepDown {
			out = append(out, sdk.SetPartition(setRef, *h))
		}
		if writeStatus {
			out = append(out, sdk.UpdateClaimUpdateStatus(vcuRef, status))
		}
		if move && !stepDown {
			out = append(out, sdk.SetPartition(setRef, *h))
		}
		if oldHeld == nil || *oldHeld != *h {
			out = append(out, sdk.Normal(setRef, ReasonPartitionHeld, "holding rollingUpdate.partition at "+itoa(*h)+
				" until the claims of pod "+p.podName(int(*h)-1)+" are compatible with VolumeClaimUpdate "+p.vcu.Metadata.Name+
				"; the user's partition "+itoa(p.user)+" is restored when the update is done"))
		}
		return out
	}
	if oldHeld != nil && p.holding {
		out = append(out, sdk.SetPartition(setRef, p.user))
	}
	if writeStatus {
		out = append(out, sdk.UpdateClaimUpdateStatus(vcuRef, status))
	}
	if oldHeld != nil {
		msg := "released rollingUpdate.partition to the user's " + itoa(p.user)
		if !p.holding {
			msg = "the user changed rollingUpdate.partition while it was held: kept the user's " + itoa(p.user)
		}
		out = append(out, sdk.Normal(setRef, ReasonPartitionReleased, msg))
	}
	return out
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
