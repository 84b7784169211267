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
	// user is the user's partition U and userPtr the value to record (nil
	// when the user set none); holding says the set's partition is the one
	// the module last held (see partition.go).
	user    int32
	userPtr *int32
	holding bool
	// compat caches compatible() per index and template.
	compat [][]bool
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
	p.user, p.userPtr, p.holding = userPartition(set, vcu)
	p.compat = make([][]bool, p.replicas)
	for i := range p.compat {
		p.compat[i] = make([]bool, len(p.templates))
		for j, t := range p.templates {
			c := p.claim(i, t)
			p.compat[i][j] = c == nil || compatible(c, t)
		}
	}
	return p
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

// claim is template t's claim of the replica at index, nil when it does not
// exist (yet: the StatefulSet controller creates it, and admission gives it
// the template).
func (p *plan) claim(index int, t *abi.PersistentVolumeClaim) *abi.PersistentVolumeClaim {
	return p.req.ClaimFor(t.Metadata.Name, p.start+index)
}

// replicaCompatible reports whether every existing claim of the replica at
// index is compatible with its template.
func (p *plan) replicaCompatible(index int) bool {
	for _, ok := range p.compat[index] {
		if !ok {
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
// the replica is ready, see podAvailable).
func (p *plan) podRolled(index int) bool {
	pod := p.req.Pod(p.start + index)
	if pod == nil || pod.Metadata.DeletionTimestamp != "" {
		return false
	}
	rev := p.set.Status.UpdateRevision
	return rev == "" || pod.Metadata.Labels["controller-revision-hash"] == rev
}

// podAvailable reports whether the replica's pod exists, is not terminating
// and has been Ready for the set's minReadySeconds (KEP-4650 "When to update
// PVCs" 2). It decides as kube-controller-manager does for availability:
// with minReadySeconds 0 Ready is enough, otherwise the Ready condition's
// lastTransitionTime plus minReadySeconds must be before now (the host's
// clock in the request, so the decision is a function of the input); a
// Ready condition without a time is not available yet. left is how long
// until it is, 0 when that cannot be known (not Ready: a change of the pod
// brings the next reconcile).
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
	now := p.req.Now()
	if since.Add(minReady).Before(now) {
		return true, 0
	}
	// A transition time in the future (a skewed clock) waits no longer
	// than minReadySeconds from now.
	left = min(since.Add(minReady).Sub(now), minReady) + time.Millisecond
	return false, left
}

// claimsUpdating reports whether a claim of the replica at index has an
// in-place update in flight: such a replica is not ready.
func (p *plan) claimsUpdating(index int) bool {
	for _, t := range p.templates {
		if c := p.claim(index, t); c != nil && updating(c) {
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
