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
// once they are.
//
// The user's own partition is recorded on the set itself, in the same write
// that moves the partition (setPartition's hold, ABI 1.4): the record and
// the hold change together or not at all, whatever crashes between two
// writes, and a VolumeClaimUpdate deleted while it holds cannot take the
// user's value with it (see release). The VolumeClaimUpdate's status shows
// the same values for the user.

// hold is the LockStep hold as the set shows it.
type hold struct {
	// user is the user's partition U, and userPtr the value to record (nil
	// when the user set none).
	user    int32
	userPtr *int32
	// held is the partition the module holds the set at, nil when no hold
	// is in place; stale says the set carries a record of a hold whose
	// partition someone has moved since (the user's change, kept).
	held  *int32
	stale bool
}

// holdOf reads the hold: the set's record (sdk.PartitionHoldOf) is in
// place while the set's partition still equals the one it records, and
// then U is the recorded user's partition; otherwise U is the set's own
// partition. A hold taken before ABI 1.4 is recorded only in vcu's status
// (vcu may be nil) and is read from there, the same way.
// A negative partition in the input (garbage: the API server refuses one)
// counts as none, so that no walk goes below index 0.
func holdOf(set *abi.StatefulSet, vcu *abi.VolumeClaimUpdate) hold {
	current := nonNegative(setPartition(set))
	if held, user, ok := sdk.PartitionHoldOf(set); ok {
		if current != nil && *current == held {
			return hold{user: deref(user), userPtr: user, held: current}
		}
		return hold{user: deref(current), userPtr: current, stale: true}
	}
	if held := legacyHold(vcu); held != nil {
		if current != nil && *current == *held {
			recorded := nonNegative(vcu.Status.UserPartition)
			return hold{user: deref(recorded), userPtr: recorded, held: current}
		}
		return hold{user: deref(current), userPtr: current, stale: true}
	}
	return hold{user: deref(current), userPtr: current}
}

// legacyHold is the partition a VolumeClaimUpdate's status says is held, nil
// for none.
func legacyHold(vcu *abi.VolumeClaimUpdate) *int32 {
	if vcu == nil {
		return nil
	}
	return vcu.Status.HeldPartition
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

// partitionActions moves the partition with its record in one write, then
// writes the status that shows them: the set's write is the one that
// counts, and a crash after it leaves a hold the next reconcile reads from
// the set whatever the status says.
func (p *plan) partitionActions(status abi.VolumeClaimUpdateStatus, writeStatus bool) []abi.Action {
	var out []abi.Action
	setRef := sdk.RefOf(p.set)
	if h := status.HeldPartition; h != nil {
		if !p.recorded(*h) {
			out = append(out, sdk.HoldPartition(setRef, *h, p.userPtr))
		}
		if writeStatus {
			out = append(out, sdk.UpdateClaimUpdateStatus(sdk.RefOf(p.vcu), status))
		}
		if p.held == nil || *p.held != *h {
			out = append(out, sdk.Normal(setRef, ReasonPartitionHeld, "holding rollingUpdate.partition at "+itoa(*h)+
				" until the claims of pod "+p.podName(int(*h)-1)+" are compatible with VolumeClaimUpdate "+p.vcu.Metadata.Name+
				"; the user's partition "+itoa(p.user)+" is restored when the update is done"))
		}
		return out
	}
	out = append(out, p.release("")...)
	if writeStatus {
		out = append(out, sdk.UpdateClaimUpdateStatus(sdk.RefOf(p.vcu), status))
	}
	return out
}

// recorded reports whether the set is held at h with the record of the
// user's partition as it should be: nothing to write.
func (p *plan) recorded(h int32) bool {
	held, user, ok := sdk.PartitionHoldOf(p.set)
	current := setPartition(p.set)
	return ok && held == h && current != nil && *current == h && int32PtrEqual(user, p.userPtr)
}

// release ends the hold: the user's partition back (0 for none) and the
// record gone, in one write; where the user moved the partition while it
// was held (stale), only the record goes and the user's value stays. why
// says why the hold ends when it is not that the update is done. No write
// is needed for a record kept only on a VolumeClaimUpdate's status (before
// ABI 1.4) that the user's change made stale, nor possible under an OnDelete
// strategy, which has no partition.
func (p *plan) release(why string) []abi.Action {
	if p.held == nil && !p.stale {
		return nil
	}
	var out []abi.Action
	setRef := sdk.RefOf(p.set)
	if _, _, record := sdk.PartitionHoldOf(p.set); p.rolling && (p.held != nil || record) {
		out = append(out, sdk.SetPartition(setRef, p.user))
	}
	msg := "released rollingUpdate.partition to the user's " + itoa(p.user) + why
	if p.held == nil {
		msg = "the user changed rollingUpdate.partition while it was held: kept the user's " + itoa(p.user) + why
	}
	return append(out, sdk.Normal(setRef, ReasonPartitionReleased, msg))
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
