package policy

import (
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// status is the VolumeClaimUpdate's status after this reconcile: KEP-4650's
// per-template counts ("Changes to StatefulSet status", which lives on the
// VolumeClaimUpdate here) and the conditions; held is the LockStep hold.
func (p *plan) status(r rollout, held *int32) abi.VolumeClaimUpdateStatus {
	gen := p.vcu.Metadata.Generation
	st := abi.VolumeClaimUpdateStatus{ObservedGeneration: gen}
	for j := range p.templates {
		st.VolumeClaimTemplates = append(st.VolumeClaimTemplates, p.count(j))
	}
	progressing, blocked := p.conditions(r)
	st.Conditions = []abi.Condition{
		p.transition(progressing, gen),
		p.transition(blocked, gen),
	}
	if held != nil {
		h := *held
		st.HeldPartition = &h
		if p.userPtr != nil {
			u := *p.userPtr
			st.UserPartition = &u
		}
	}
	return st
}

// count counts the existing claims of live replicas of the j-th template.
func (p *plan) count(j int) abi.VolumeClaimTemplateStatus {
	s := abi.VolumeClaimTemplateStatus{TemplateName: p.templates[j].Metadata.Name}
	var total capacityTotal
	for i := 0; i < p.replicas; i++ {
		c := p.state(i, j)
		if c.c == nil {
			continue
		}
		if c.compatible {
			s.CompatibleReplicas++
		}
		if c.updating {
			s.UpdatingReplicas++
		}
		if c.overSized {
			s.OverSizedReplicas++
		}
		if c.hasCapacity && len(c.c.Status.Capacity) == 1 {
			// Storage alone, the usual case: its size is parsed already.
			total.add(storage, c.capacity)
			continue
		}
		for k, v := range c.c.Status.Capacity {
			total.add(k, quantity(v))
		}
	}
	s.TotalCapacity = total.strings()
	return s
}

// capacityTotal sums the claims' capacities by resource: storage, the one
// every claim has, in a field, so that summing it neither hashes nor
// iterates a map; any other resource in others.
type capacityTotal struct {
	storage    sdk.Quantity
	hasStorage bool
	others     map[string]sdk.Quantity
}

func (t *capacityTotal) add(resource string, q sdk.Quantity) {
	if resource == storage {
		t.storage, t.hasStorage = t.storage.Add(q), true
		return
	}
	if t.others == nil {
		t.others = map[string]sdk.Quantity{}
	}
	t.others[resource] = t.others[resource].Add(q)
}

// strings is the totals as the status writes them, nil when no claim had a
// capacity.
func (t *capacityTotal) strings() map[string]string {
	if !t.hasStorage && len(t.others) == 0 {
		return nil
	}
	out := make(map[string]string, len(t.others)+1)
	if t.hasStorage {
		out[storage] = t.storage.String()
	}
	for k, v := range t.others {
		out[k] = v.String()
	}
	return out
}

// conditions words Progressing and Blocked from the walk.
func (p *plan) conditions(r rollout) (progressing, blocked abi.Condition) {
	blocked = abi.Condition{Type: ConditionBlocked, Status: "False", Reason: ReasonNotBlocked}
	progressing = abi.Condition{Type: ConditionProgressing}
	note := ""
	if p.inPlace && p.lockStep && !p.rolling {
		note = " (LockStep acts as Async: the set's updateStrategy is OnDelete, so the pod rollout cannot be held)"
	}
	switch {
	case r.blocked != nil:
		// Neither done nor moving: Unknown, as a paused Deployment's
		// Progressing is, so that waiting for Progressing=False (the end of
		// the update) does not return while the update needs the user.
		blocked.Status, blocked.Reason, blocked.Message = "True", r.blocked.reason, r.blocked.message
		progressing.Status, progressing.Reason, progressing.Message = "Unknown", ReasonBlocked, "blocked until the user acts: "+r.blocked.message
	case r.inFlight:
		progressing.Status, progressing.Reason, progressing.Message = "True", ReasonClaimsUpdating, "claims are being updated in place"+note
	case r.recreating >= 0:
		progressing.Status, progressing.Reason, progressing.Message = "True", ReasonClaimsRecreating,
			"pod "+p.podName(r.recreating)+" and its claims are being made again from the template: the StatefulSet controller creates them once the old ones are gone"
	case r.waitPod >= 0 && r.waitReady:
		progressing.Status, progressing.Reason, progressing.Message = "True", ReasonWaitingForReplicaReady,
			"waiting for replica "+p.podName(r.waitPod)+" to be ready (pod Ready for minReadySeconds "+itoa(p.set.Spec.MinReadySeconds)+
				", no claim updating) before the next replica's claims"
	case r.waitPod >= 0:
		progressing.Status, progressing.Reason, progressing.Message = "True", ReasonWaitingForPodRollout,
			"waiting for pod "+p.podName(r.waitPod)+" to run the set's update revision and be Ready before the next replica's claims"
	case r.waitDeletion:
		progressing.Status, progressing.Reason, progressing.Message = "True", ReasonWaitingForPodDeletion,
			"updateStrategy is OnDelete: a replica's claims are updated when its pod is deleted"+note
	case p.allCompatibleFrom(0):
		progressing.Status, progressing.Reason, progressing.Message = "False", ReasonComplete, "every claim is compatible with its template"
	case p.inPlace && p.rolling && p.allCompatibleFrom(int(p.user)) && p.remainingInPlaceable():
		progressing.Status, progressing.Reason, progressing.Message = "False", ReasonComplete,
			"every claim from partition "+itoa(p.user)+" up is compatible; replicas below the partition keep their claims, as they keep their pods"
	default:
		progressing.Status, progressing.Reason, progressing.Message = "False", ReasonWaitingForClaimRecreation,
			"the claims left are updated only when they are recreated: delete a claim and its pod to give it the template"+note
	}
	return progressing, blocked
}

// remainingInPlaceable reports whether every incompatible claim could be
// updated in place: then only the partition keeps them as they are.
func (p *plan) remainingInPlaceable() bool {
	for i := 0; i < p.replicas; i++ {
		for j, t := range p.templates {
			if s := p.state(i, j); !s.compatible && !inPlaceable(s.c, t) {
				return false
			}
		}
	}
	return true
}

// transition keeps the old lastTransitionTime unless the status or reason
// changed, so a steady state writes nothing.
func (p *plan) transition(c abi.Condition, gen int64) abi.Condition {
	return transition(p.req.Now(), p.vcu.Status.Conditions, c, gen)
}

// transition is condition c at generation gen, set at now unless conditions
// (the old ones) have c's type with the same status and reason: then since
// that one's lastTransitionTime.
func transition(now time.Time, conditions []abi.Condition, c abi.Condition, gen int64) abi.Condition {
	c.ObservedGeneration = gen
	c.LastTransitionTime = now.UTC().Format(time.RFC3339)
	if old := findCondition(conditions, c.Type); old != nil && old.Status == c.Status && old.Reason == c.Reason {
		c.LastTransitionTime = old.LastTransitionTime
	}
	return c
}

func findCondition(conds []abi.Condition, t string) *abi.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
