package policy

import (
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// plan is one reconcile's reading of the set and its VolumeClaimUpdate.
type plan struct {
	req *sdk.Request
	set *abi.StatefulSet
	vcu *abi.VolumeClaimUpdate
	// templates are the VolumeClaimUpdate's templates that name one of the
	// set's, in the VolumeClaimUpdate's order; unknown names the others.
	templates []*abi.PersistentVolumeClaim
	unknown   []string
	// start is the first ordinal; replicas the number of live replicas. A
	// replica's index is its ordinal minus start: the partition compares to
	// the index, as kube-controller-manager's rollout loop does.
	start, replicas int
	// rolling: the set's updateStrategy is RollingUpdate (the default).
	rolling  bool
	inPlace  bool
	lockStep bool
	// hold is the LockStep hold as the set shows it, with the user's
	// partition U (see partition.go).
	hold
	// claims is each replica's claim of each template and what the rules
	// say of it, replicas × templates row by row (see state): worked out
	// once, since the walk, the hold and the counts all ask again.
	claims []claimState
	// requests and annotations are each template's storage request,
	// parsed, and its annotations without the host's record.
	requests    []sdk.Quantity
	annotations []map[string]string
}

// claimState is one replica's claim of one template.
type claimState struct {
	c          *abi.PersistentVolumeClaim // nil: the claim does not exist
	compatible bool                       // true too when c is nil: nothing to update
	updating   bool
	overSized  bool
	// capacity is status.capacity's storage, parsed; hasCapacity says the
	// claim has one.
	capacity    sdk.Quantity
	hasCapacity bool
}

// newPlan reads the request; nil when there is nothing to do: no set, no
// VolumeClaimUpdate, or one for another set.
func newPlan(req *sdk.Request) *plan {
	set, vcu := req.StatefulSet(), req.ClaimUpdate()
	if set == nil || vcu == nil || vcu.Spec.StatefulSetName != set.Metadata.Name {
		return nil
	}
	p := &plan{
		req: req, set: set, vcu: vcu,
		rolling:  set.Spec.UpdateStrategy.Type != "OnDelete",
		inPlace:  vcu.Spec.VolumeClaimUpdateStrategy == updateInPlace,
		lockStep: vcu.Spec.VolumeClaimSyncStrategy == syncLockStep,
	}
	start, end := sdk.OrdinalRange(set)
	p.start, p.replicas = start, end-start
	p.templates, p.unknown = matchTemplates(set, vcu)
	p.hold = holdOf(set, vcu)
	p.requests = make([]sdk.Quantity, len(p.templates))
	p.annotations = make([]map[string]string, len(p.templates))
	for j, t := range p.templates {
		p.requests[j] = quantity(t.Spec.Resources.Requests[storage])
		p.annotations[j] = templateAnnotations(t)
	}
	p.claims = make([]claimState, p.replicas*len(p.templates))
	p.findClaims()
	for k := range p.claims {
		p.judge(&p.claims[k], k%len(p.templates))
	}
	return p
}

// findClaims sets each replica's claim of each template: the claim named
// sdk.ClaimName(template, set, ordinal), the last one when names repeat, as
// sdk.Request.ClaimFor finds it. The names are matched as they are rather
// than built and looked up: in a guest, building a name and hashing it cost
// more than the rest of a replica's rules.
func (p *plan) findClaims() {
	claims := p.req.Claims()
	for k := range claims {
		for j, t := range p.templates {
			ordinal, ok := sdk.ClaimOrdinal(claims[k].Metadata.Name, t.Metadata.Name, p.set.Metadata.Name)
			if index := ordinal - p.start; ok && index >= 0 && index < p.replicas {
				p.state(index, j).c = &claims[k]
			}
		}
	}
}

// judge works out what the rules say of the claim of template j in s.
func (p *plan) judge(s *claimState, j int) {
	c := s.c
	if c == nil {
		s.compatible = true
		return
	}
	var capacityText string
	capacityText, s.hasCapacity = c.Status.Capacity[storage]
	if s.hasCapacity {
		s.capacity = quantity(capacityText)
	}
	reaches := s.capacity.Cmp(p.requests[j])
	s.compatible = compatible(c, p.templates[j], p.annotations[j], s.hasCapacity && reaches >= 0)
	s.updating = updating(c, quantity(c.Spec.Resources.Requests[storage]), s.capacity)
	s.overSized = s.hasCapacity && reaches > 0
}

// state is the claim of template j of the replica at index.
func (p *plan) state(index, j int) *claimState {
	return &p.claims[index*len(p.templates)+j]
}

// matchTemplates pairs the VolumeClaimUpdate's templates with the set's: a
// template the set lacks names no claim the set mounts.
func matchTemplates(set *abi.StatefulSet, vcu *abi.VolumeClaimUpdate) (known []*abi.PersistentVolumeClaim, unknown []string) {
	for i := range vcu.Spec.VolumeClaimTemplates {
		t := &vcu.Spec.VolumeClaimTemplates[i]
		if setHasTemplate(set, t.Metadata.Name) {
			known = append(known, t)
		} else {
			unknown = append(unknown, t.Metadata.Name)
		}
	}
	return known, unknown
}

func setHasTemplate(set *abi.StatefulSet, name string) bool {
	for i := range set.Spec.VolumeClaimTemplates {
		if set.Spec.VolumeClaimTemplates[i].Metadata.Name == name {
			return true
		}
	}
	return false
}

// replicaCompatible reports whether every existing claim of the replica at
// index is compatible with its template.
func (p *plan) replicaCompatible(index int) bool {
	for j := range p.templates {
		if !p.state(index, j).compatible {
			return false
		}
	}
	return true
}

// allCompatible reports whether the replicas from index from up are.
func (p *plan) allCompatibleFrom(from int) bool {
	for i := max(from, 0); i < p.replicas; i++ {
		if !p.replicaCompatible(i) {
			return false
		}
	}
	return true
}

// podName is the pod of the replica at index.
func (p *plan) podName(index int) string { return sdk.PodName(p.set.Metadata.Name, p.start+index) }

// podRolled reports whether the replica's pod exists, is not terminating
// and runs the set's update revision: LockStep moves on only then (and once
// the replica is ready, see podAvailable). The update revision is the
// controller's word only for the generation it has observed: after a change
// of the pod template (or of the partition) and before kube-controller-manager
// has written its status, the old revision still stands there and every pod
// would seem rolled, so nothing counts as rolled until status.observedGeneration
// reaches metadata.generation (the controller's own rule for its status).
func (p *plan) podRolled(index int) bool {
	pod := p.req.Pod(p.start + index)
	if pod == nil || pod.Metadata.DeletionTimestamp != "" {
		return false
	}
	if p.set.Status.ObservedGeneration < p.set.Metadata.Generation {
		return false
	}
	rev := p.set.Status.UpdateRevision
	return rev == "" || pod.Metadata.Labels["controller-revision-hash"] == rev
}

// podAvailable reports whether the replica's pod exists, is not terminating
// and has been Ready for the set's minReadySeconds (KEP-4650 "When to update
// PVCs" 2). It decides as kube-controller-manager 1.37's IsPodAvailable
// does: with minReadySeconds 0 Ready is enough, otherwise the Ready
// condition's lastTransitionTime plus minReadySeconds must be at or before
// now (the host's clock in the request, so the decision is a function of
// the input); a Ready condition without a time is not available yet. left
// is how long until it is, 0 when that cannot be known (not Ready: a change
// of the pod brings the next reconcile).
func (p *plan) podAvailable(index int) (ok bool, left time.Duration) {
	pod := p.req.Pod(p.start + index)
	if pod == nil || pod.Metadata.DeletionTimestamp != "" {
		return false, 0
	}
	ready := readyCondition(pod)
	if ready == nil || ready.Status != "True" {
		return false, 0
	}
	minReady := time.Duration(p.set.Spec.MinReadySeconds) * time.Second
	if minReady <= 0 {
		return true, 0
	}
	since, err := time.Parse(time.RFC3339, ready.LastTransitionTime)
	if err != nil {
		return false, 0
	}
	now, at := p.req.Now(), since.Add(minReady)
	if !at.After(now) {
		return true, 0
	}
	// A transition time in the future (a skewed clock) waits no longer
	// than minReadySeconds from now. At exactly `at` the pod is available,
	// so the time left is enough: the SDK rounds it up to a millisecond.
	return false, min(at.Sub(now), minReady)
}

// claimsUpdating reports whether a claim of the replica at index has an
// in-place update in flight: such a replica is not ready.
func (p *plan) claimsUpdating(index int) bool {
	for j := range p.templates {
		if p.state(index, j).updating {
			return true
		}
	}
	return false
}

// podGone reports whether the replica's pod is absent or terminating: under
// pod OnDelete its claims are updated only then (KEP-4650 "When to update
// PVCs" 3 and 4).
func (p *plan) podGone(index int) bool {
	pod := p.req.Pod(p.start + index)
	return pod == nil || pod.Metadata.DeletionTimestamp != ""
}

func readyCondition(pod *abi.Pod) *abi.Condition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == "Ready" {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
