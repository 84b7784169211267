package policy

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// notInEffect tells each VolumeClaimUpdate that names the set but is not in
// effect that it does nothing, and why. One VolumeClaimUpdate per set takes
// effect: the oldest, which the host gives the module as the one in effect
// (ABI 1.4), so that one created later never takes over a rollout under
// way. Each other one gets Blocked True with reason NotInEffect, naming the
// one in effect and saying what to do, and Progressing Unknown, as any
// update that needs the user: `kubectl wait --for=condition=Blocked` on it
// returns, and `--for=condition=Progressing=False` does not return as if it
// were done. A Warning event NotInEffect on it says the same once, when
// Blocked turns True with that reason. A status already so is not written
// again; one being deleted is left alone.
func notInEffect(req *sdk.Request, inEffect *abi.VolumeClaimUpdate) []abi.Action {
	others := req.OtherClaimUpdates()
	if len(others) == 0 || inEffect == nil {
		return nil
	}
	var out []abi.Action
	for i := range others {
		u := &others[i]
		if u.Metadata.DeletionTimestamp != "" {
			continue
		}
		msg := "VolumeClaimUpdate " + u.Metadata.Name + " is not in effect: VolumeClaimUpdate " + inEffect.Metadata.Name +
			" is, for StatefulSet " + u.Spec.StatefulSetName + " (only the oldest of those that name a set takes effect);" +
			" delete one of them, or move this one's templates into " + inEffect.Metadata.Name
		gen, now := u.Metadata.Generation, req.Now()
		st := abi.VolumeClaimUpdateStatus{ObservedGeneration: gen, Conditions: []abi.Condition{
			transition(now, u.Status.Conditions, abi.Condition{Type: ConditionProgressing, Status: "Unknown", Reason: ReasonBlocked,
				Message: "blocked until the user acts: " + msg}, gen),
			transition(now, u.Status.Conditions, abi.Condition{Type: ConditionBlocked, Status: "True", Reason: ReasonNotInEffect, Message: msg}, gen),
		}}
		ref := sdk.RefOf(u)
		if !statusEqual(&st, &u.Status) {
			out = append(out, sdk.UpdateClaimUpdateStatus(ref, st))
		}
		if old := findCondition(u.Status.Conditions, ConditionBlocked); old == nil || old.Status != "True" || old.Reason != ReasonNotInEffect {
			out = append(out, sdk.Warning(ref, ReasonNotInEffect, msg))
		}
	}
	return out
}
