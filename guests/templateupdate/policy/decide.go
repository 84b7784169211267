package policy

import (
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// decide is one reconcile: walk the replicas, work out the LockStep hold and
// the status, and return only what changes something, so that a steady state
// returns no action at all. requeue is when a replica waited for will have
// been ready for minReadySeconds (0: no such wait): nothing in the cluster
// changes then, so only the clock brings the next reconcile.
func decide(req *sdk.Request) (actions []abi.Action, requeue time.Duration) {
	set, vcu := req.StatefulSet(), req.ClaimUpdate()
	if set == nil {
		return nil, 0
	}
	others := notInEffect(req, vcu)
	if vcu == nil || vcu.Metadata.DeletionTimestamp != "" {
		return append(orphaned(set), others...), 0
	}
	p := newPlan(req)
	if p == nil {
		return others, 0
	}
	r := p.walk()
	var held *int32
	if h, ok := p.holdAt(); ok {
		held = &h
	}
	status := p.status(r, held)
	writeStatus := !statusEqual(&status, &p.vcu.Status)

	actions = p.partitionActions(status, writeStatus)
	actions = append(actions, r.actions...)
	actions = append(actions, p.warnings(r)...)
	return append(actions, others...), r.requeue
}

// warnings are the Warning events on the VolumeClaimUpdate, each recorded
// once: a block when it starts or changes reason, unknown templates when a
// new generation of the spec is first seen.
func (p *plan) warnings(r rollout) []abi.Action {
	var out []abi.Action
	ref := sdk.RefOf(p.vcu)
	if b := r.blocked; b != nil {
		old := findCondition(p.vcu.Status.Conditions, ConditionBlocked)
		if old == nil || old.Status != "True" || old.Reason != b.reason {
			out = append(out, sdk.Warning(ref, b.reason, b.message))
		}
	}
	if p.vcu.Status.ObservedGeneration != p.vcu.Metadata.Generation {
		for _, name := range p.unknown {
			out = append(out, sdk.Warning(ref, ReasonUnknownTemplate, "template "+name+" is not one of StatefulSet "+
				p.set.Metadata.Name+"'s volumeClaimTemplates: it is ignored (a set's templates cannot be added to)"))
		}
	}
	return out
}

// orphaned is a set whose VolumeClaimUpdate is gone or being deleted: a
// LockStep hold it left in place is released to the user's partition, which
// the set's record keeps (partition.go), and nothing else is done. Without a
// record there is nothing to do, and every StatefulSet without a
// VolumeClaimUpdate is one of those.
func orphaned(set *abi.StatefulSet) []abi.Action {
	if _, _, ok := sdk.PartitionHoldOf(set); !ok {
		return nil
	}
	p := &plan{set: set, rolling: set.Spec.UpdateStrategy.Type != "OnDelete", hold: holdOf(set, nil)}
	return p.release(": the VolumeClaimUpdate that held it is gone")
}
