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
	t := p.templates[j]
	s := abi.VolumeClaimTemplateStatus{TemplateName: t.Metadata.Name}
	total := map[string]sdk.Quantity{}
	var keys []string
	for i := 0; i < p.replicas; i++ {
		c := p.claim(i, t)
		if c == nil {
			continue
		}
		if p.compat[i][j] {
			s.CompatibleReplicas++
		}
		if updating(c) {
			s.UpdatingReplicas++
		}
		if overSized(c, t) {
			s.OverSizedReplicas++
		}
		for k, v := range c.Status.Capacity {
			if _, ok := total[k]; !ok {
				keys = append(keys, k)
			}
			total[k] = total[k].Add(quantity(v))
		}
	}
	if len(keys) > 0 {
		s.TotalCapacity = make(map[string]string, len(keys))
		for _, k := range keys {
			s.TotalCapacity[k] = total[k].String()
		}
	}
	return s
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
	case r.recreating:
		progressing.Status, progressing.Reason, progressing.Message = "True", ReasonClaimsRecreating,
			"a claim and its pod are being deleted; the StatefulSet controller recreates them from the template"
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
			if !p.compat[i][j] && !inPlaceable(p.claim(i, t), t) {
				return false
			}
		}
	}
	return true
}

// transition keeps the old lastTransitionTime unless the status or reason
// changed, so a steady state writes nothing.
func (p *plan) transition(c abi.Condition, gen int64) abi.Condition {
	c.ObservedGeneration = gen
	c.LastTransitionTime = p.req.Now().UTC().Format(time.RFC3339)
	if old := findCondition(p.vcu.Status.Conditions, c.Type); old != nil && old.Status == c.Status && old.Reason == c.Reason {
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
