package policy

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// blockage is why the rollout cannot go on without the user.
type blockage struct {
	reason  string
	message string
}

// rollout is what the walk over the replicas decided.
type rollout struct {
	// actions are the applyClaim actions and their ClaimUpdating events.
	actions  []abi.Action
	blocked  *blockage
	inFlight bool // an in-place update is in flight or was just applied
	// waitPod is the replica whose pod LockStep waits for, -1 for none.
	waitPod      int
	waitDeletion bool // pod OnDelete: a replica waits for its pod's deletion
}

// assessment is one replica's claims, sorted by what they need.
type assessment struct {
	failed      *abi.PersistentVolumeClaim // a resize the resizer gave up on
	noExpansion *abi.PersistentVolumeClaim // must grow; its class forbids it
	immutable   *abi.PersistentVolumeClaim // only recreation makes it compatible
	immutableT  *abi.PersistentVolumeClaim
	applies     []abi.Action // applyClaim and ClaimUpdating event pairs
	inFlight    bool
}

// walk updates claims in place in rollout order (KEP-4650 "When to update
// PVCs"); only InPlace updates in place at all.
func (p *plan) walk() rollout {
	r := rollout{waitPod: -1}
	switch {
	case !p.inPlace:
	case p.rolling:
		p.walkRolling(&r)
	default:
		p.walkOnDelete(&r)
	}
	return r
}

// walkRolling goes from the highest index down to the user's partition, one
// replica at a time, as a RollingUpdate rolls pods: indexes below the
// partition keep their claims as they keep their pods.
func (p *plan) walkRolling(r *rollout) {
	for i := p.replicas - 1; i >= int(p.user); i-- {
		if p.replicaCompatible(i) {
			if p.lockStep && !p.podRolled(i) {
				r.waitPod = i
				return
			}
			continue
		}
		a := p.assess(i)
		if r.blocked = a.blockage(); r.blocked != nil {
			return
		}
		switch {
		case a.immutable != nil && p.lockStep:
			r.blocked = immutableBlockage(a.immutable, a.immutableT, p.podName(i))
			return
		case len(a.applies) > 0 || a.inFlight:
			r.actions = append(r.actions, a.applies...)
			r.inFlight = true
			return
		}
		// Async leaves a claim only recreation fixes, as OnDelete would.
	}
}

// walkOnDelete updates the claims of replicas whose pod is absent or
// terminating: under pod OnDelete the user decides when a replica is
// updated, and its claims follow its pod. LockStep cannot hold pods then.
func (p *plan) walkOnDelete(r *rollout) {
	for i := p.replicas - 1; i >= 0; i-- {
		if p.replicaCompatible(i) {
			continue
		}
		a := p.assess(i)
		if a.failed != nil {
			// A failed update blocks whether or not the pod came back.
			r.blocked = failedBlockage(a.failed)
			return
		}
		if !p.podGone(i) {
			if a.inFlight {
				r.inFlight = true
			} else if a.applies != nil || a.noExpansion != nil {
				r.waitDeletion = true
			}
			continue
		}
		if r.blocked = a.blockage(); r.blocked != nil {
			return
		}
		if len(a.applies) > 0 || a.inFlight {
			r.actions = append(r.actions, a.applies...)
			r.inFlight = true
		}
	}
}

// blockage is what stops the rollout at this replica whatever the sync
// strategy: a failed update (KEP-4650: "If the PVC update fails, we should
// block the update process"), or a growth the class refuses.
func (a *assessment) blockage() *blockage {
	switch {
	case a.failed != nil:
		return failedBlockage(a.failed)
	case a.noExpansion != nil:
		return noExpansionBlockage(a.noExpansion)
	}
	return nil
}

// assess sorts the replica's incompatible claims by what they need.
func (p *plan) assess(index int) assessment {
	var a assessment
	for j, t := range p.templates {
		if p.compat[index][j] {
			continue
		}
		c := p.claim(index, t)
		switch {
		case !inPlaceable(c, t):
			if a.immutable == nil {
				a.immutable, a.immutableT = c, t
			}
		case failed(c):
			if a.failed == nil {
				a.failed = c
			}
		case c.Status.Phase != "Bound":
			// The API server refuses any change to an unbound claim's
			// spec; the rollout waits here until it binds.
			a.inFlight = true
		default:
			p.assessInPlace(&a, c, t)
		}
	}
	return a
}

// assessInPlace adds what an in-placeable claim needs: an apply, nothing
// while an update is in flight, or a block when it must grow and cannot.
func (p *plan) assessInPlace(a *assessment, c, t *abi.PersistentVolumeClaim) {
	apply, changes, grow := applyFor(c, t)
	if grow && !expansionAllowed(p.req, c) {
		if a.noExpansion == nil {
			a.noExpansion = c
		}
		return
	}
	if len(changes) > 0 {
		a.applies = append(a.applies,
			sdk.ApplyClaim(sdk.RefOf(c), apply),
			sdk.Normal(sdk.RefOf(c), ReasonClaimUpdating, claimUpdatingMessage(c, t, changes)))
		return
	}
	if updating(c) {
		a.inFlight = true
	}
}

// applyFor is the server-side apply that makes c follow t, and changes names
// what it changes (none: there is nothing to send). It carries every field
// kubeplug's field manager owns on a claim, changed or not: t's labels and
// annotations (apply owns only those keys, so the user's own stay), the
// storage rule's size, t's VolumeAttributesClass. Server-side apply removes
// a field its manager applied before and now omits, and a claim refuses to
// lose its storage request or its class, so a second apply that left out
// an unchanged size or class would fail for good.
func applyFor(c, t *abi.PersistentVolumeClaim) (apply abi.ClaimApply, changes []string, grow bool) {
	if !superset(c.Metadata.Labels, t.Metadata.Labels) {
		changes = append(changes, "labels")
	}
	if !superset(c.Metadata.Annotations, t.Metadata.Annotations) {
		changes = append(changes, "annotations")
	}
	want, grow := wantStorage(c, t)
	if grow {
		changes = append(changes, "storage "+c.Spec.Resources.Requests[storage]+" to "+want)
	}
	vac := str(t.Spec.VolumeAttributesClassName)
	if vac != "" && vac != str(c.Spec.VolumeAttributesClassName) {
		changes = append(changes, "volumeAttributesClassName to "+vac)
	}
	if len(changes) == 0 {
		return apply, nil, false
	}
	apply.Labels, apply.Annotations = t.Metadata.Labels, t.Metadata.Annotations
	if want != "" {
		apply.Resources = &abi.ResourceRequirements{Requests: map[string]string{storage: want}}
	}
	if vac != "" {
		apply.VolumeAttributesClassName = &vac
	}
	return apply, changes, grow
}
