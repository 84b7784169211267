package policy

import (
	"time"

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
	// waitPod is the replica the walk waits for, -1 for none: its pod
	// must roll (LockStep) or the replica be ready (waitReady).
	waitPod   int
	waitReady bool
	// recreating is the replica, -1 for none, whose claim the walk waits
	// for while the StatefulSet controller makes it and its pod again from
	// the template: the old claim is being deleted with its pod gone too,
	// or is gone already (LockStep).
	recreating   int
	waitDeletion bool // pod OnDelete: a replica waits for its pod's deletion
	// requeue is when the replica waited for has been ready for
	// minReadySeconds; 0 for no such wait.
	requeue time.Duration
}

// assessment is one replica's claims, sorted by what they need.
type assessment struct {
	failed      *abi.PersistentVolumeClaim // a resize the resizer gave up on
	noExpansion *abi.PersistentVolumeClaim // must grow; its class forbids it
	immutable   *abi.PersistentVolumeClaim // only recreation makes it compatible
	immutableT  *abi.PersistentVolumeClaim
	// applies are applyClaim and ClaimUpdating event pairs: what can be
	// applied, even to a claim that is also failed or cannot grow (KEP-4650:
	// "update the PVC in-place to the extent possible").
	applies  []abi.Action
	inFlight bool
}

// walk updates claims in place in rollout order (KEP-4650 "When to update
// PVCs"); only InPlace updates in place at all, and LockStep under
// volumeClaimUpdateStrategy OnDelete waits for the user at each replica.
func (p *plan) walk() rollout {
	r := rollout{waitPod: -1, recreating: -1}
	switch {
	case p.rolling && (p.inPlace || p.lockStep):
		p.walkRolling(&r)
	case p.inPlace:
		p.walkOnDelete(&r)
	}
	return r
}

// walkRolling goes from the highest index down to the user's partition, as
// a RollingUpdate rolls pods: indexes below the partition keep their claims
// as they keep their pods. It updates the claims of the replicas choose
// picks, as kube-controller-manager picks the pods it re-creates (budget.go):
// with the default maxUnavailable of 1, one replica at a time, the next only
// once this one is compatible and available, and none while any replica is
// unavailable. KEP-4650: "A replica is considered ready if the Pod is ready
// and all its volumes are not being updated in-place. Wait for a replica to
// be ready for at least minReadySeconds before proceeding to the next
// replica", under either sync strategy; LockStep also waits for the pod to
// run the update revision.
func (p *plan) walkRolling(r *rollout) {
	work, ok := p.work()
	if !ok {
		r.recreating = p.claimMissing()
		return
	}
	av := p.availability()
	chosen := p.choose(work, &av)
	r.requeue = av.requeue
	roll := -1 // a chosen replica whose only work is its pod's roll
	for i := p.replicas - 1; i >= int(p.user); i-- {
		switch {
		case !work[i]:
			continue
		case !chosen[i]:
			// Not this replica's turn; an update already in flight on it
			// still is one.
			r.inFlight = r.inFlight || p.claimsUpdating(i)
			continue
		case p.replicaCompatible(i):
			roll = max(roll, i)
			continue
		}
		a := p.assess(i)
		if b := a.blockage(); b != nil {
			// What can be applied still is; the rest waits for the user.
			r.actions = append(r.actions, a.applies...)
			r.blocked = b
			return
		}
		if a.immutable != nil && p.lockStep {
			p.needsUser(r, i, a.immutable, a.immutableT)
			return
		}
		r.actions = append(r.actions, a.applies...)
		r.inFlight = r.inFlight || len(a.applies) > 0 || a.inFlight
	}
	switch {
	case r.inFlight:
	case roll >= 0:
		r.waitPod = roll
	case av.first >= 0:
		r.waitPod, r.waitReady = av.first, true
	}
	if i := r.waitPod; i >= 0 && p.lockStep && !p.claimsExist(i) {
		// The claim the user deleted is gone: the replica waits for the
		// StatefulSet controller to make it and its pod again.
		r.waitPod, r.waitReady, r.recreating = -1, false, i
	}
}

// claimMissing is the highest replica from the user's partition up, under
// LockStep, whose claim of some template does not exist, -1 for none: the
// StatefulSet controller is making it (again) with its pod, and until it
// has, the update is not done.
func (p *plan) claimMissing() int {
	if !p.lockStep {
		return -1
	}
	for i := p.replicas - 1; i >= int(p.user); i-- {
		if !p.claimsExist(i) {
			return i
		}
	}
	return -1
}

// claimsExist reports whether the replica has its claim of every template.
func (p *plan) claimsExist(index int) bool {
	for j := range p.templates {
		if p.state(index, j).c == nil {
			return false
		}
	}
	return true
}

// work marks the replicas at or above the user's partition where the walk
// has something to do or to wait for: an incompatible claim it updates in
// place or that settles by itself, any incompatible claim under LockStep
// (the user must act), and under LockStep a pod still to roll above the
// lowest such replica. ok is false when no replica has any: the update is
// done as far as the walk goes, and nothing is waited for.
func (p *plan) work() (work []bool, ok bool) {
	work = make([]bool, p.replicas)
	lowest := -1
	for i := p.replicas - 1; i >= int(p.user); i-- {
		if p.moves(i) {
			work[i], lowest = true, i
		}
	}
	if lowest < 0 {
		return work, false
	}
	if p.lockStep {
		for i := lowest + 1; i < p.replicas; i++ {
			work[i] = work[i] || !p.podRolled(i)
		}
	}
	return work, true
}

// moves reports whether the replica has an incompatible claim the walk acts
// or waits on: under Async a claim only recreation fixes is left, as
// OnDelete would leave it.
func (p *plan) moves(index int) bool {
	for j, t := range p.templates {
		if s := p.state(index, j); !s.compatible && (p.lockStep || inPlaceable(s.c, t)) {
			return true
		}
	}
	return false
}

// needsUser is LockStep at a replica whose claim the module does not update
// in place: KEP-4650 "wait for the user to delete/update the old PVC
// manually". A claim being deleted while its pod is gone or going is being
// recreated; otherwise the user must act, and Blocked says what to do.
func (p *plan) needsUser(r *rollout, index int, c, t *abi.PersistentVolumeClaim) {
	if c.Metadata.DeletionTimestamp != "" {
		if p.podGone(index) {
			r.recreating = index
			return
		}
		reason := ReasonImmutableFieldChanged
		if !p.inPlace {
			reason = ReasonClaimNeedsRecreation
		}
		r.blocked = deletingBlockage(reason, c, p.podName(index))
		return
	}
	if inPlaceable(c, t) {
		r.blocked = onDeleteBlockage(c, t, p.podName(index))
		return
	}
	r.blocked = immutableBlockage(c, t, p.podName(index))
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
		if b := a.blockage(); b != nil {
			r.actions = append(r.actions, a.applies...)
			r.blocked = b
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

// assess sorts the replica's incompatible claims by what they need. Under
// volumeClaimUpdateStrategy OnDelete every one of them waits for the user.
func (p *plan) assess(index int) assessment {
	var a assessment
	for j, t := range p.templates {
		s := p.state(index, j)
		if s.compatible {
			continue
		}
		c := s.c
		switch {
		case !p.inPlace && inPlaceable(c, t) && (c.Status.Phase != "Bound" || s.updating && specReaches(c, t)):
			// A claim made from the template (being bound or grown) needs
			// nobody: it becomes compatible on its own.
			a.inFlight = true
		case !p.inPlace || !inPlaceable(c, t):
			if a.immutable == nil {
				a.immutable, a.immutableT = c, t
			}
		case c.Status.Phase != "Bound":
			// The API server refuses any change to an unbound claim's
			// spec; the rollout waits here until it binds.
			a.inFlight = true
		default:
			p.assessInPlace(&a, s, t)
		}
	}
	return a
}

// assessInPlace adds what an in-placeable claim needs: the apply of what can
// be applied, and a block when the rest cannot (a failed update, a growth
// the class refuses), or nothing while an update is in flight.
func (p *plan) assessInPlace(a *assessment, s *claimState, t *abi.PersistentVolumeClaim) {
	c := s.c
	apply, changes, grow, lower := applyFor(c, t)
	noExpansion := grow && !expansionAllowed(p.req, c)
	if noExpansion {
		// Labels, annotations and the class can still be applied; the
		// size the API server would refuse is left out, and reported.
		apply, changes, _, _ = applyWithout(c, t)
		if a.noExpansion == nil {
			a.noExpansion = c
		}
	}
	if failed(c) && !lower {
		// Lowering the request recovers a failed expansion; anything else
		// waits for the user, after what can be applied.
		if a.failed == nil {
			a.failed = c
		}
	}
	if len(changes) > 0 {
		a.applies = append(a.applies,
			sdk.ApplyClaim(sdk.RefOf(c), apply),
			sdk.Normal(sdk.RefOf(c), ReasonClaimUpdating, claimUpdatingMessage(c, t, changes)))
		return
	}
	if s.updating {
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
func applyFor(c, t *abi.PersistentVolumeClaim) (apply abi.ClaimApply, changes []string, grow, lower bool) {
	want, grow, lower := wantStorage(c, t)
	apply, changes = buildApply(c, t, want)
	return apply, changes, grow, lower
}

// applyWithout is applyFor keeping the claim's storage request as it is.
func applyWithout(c, t *abi.PersistentVolumeClaim) (apply abi.ClaimApply, changes []string, grow, lower bool) {
	apply, changes = buildApply(c, t, c.Spec.Resources.Requests[storage])
	return apply, changes, false, false
}

func buildApply(c, t *abi.PersistentVolumeClaim, want string) (apply abi.ClaimApply, changes []string) {
	annotations := templateAnnotations(t)
	if !superset(c.Metadata.Labels, t.Metadata.Labels) {
		changes = append(changes, "labels")
	}
	if !superset(c.Metadata.Annotations, annotations) {
		changes = append(changes, "annotations")
	}
	spec := c.Spec.Resources.Requests[storage]
	if want != "" && (spec == "" || quantity(want).Cmp(quantity(spec)) != 0) {
		what := "storage " + spec + " to " + want
		if spec != "" && quantity(want).Cmp(quantity(spec)) < 0 {
			what += " (lowering the request recovers the failed or unfinished expansion to " + spec + ")"
		}
		changes = append(changes, what)
	}
	vac := str(t.Spec.VolumeAttributesClassName)
	if vac != "" && vac != str(c.Spec.VolumeAttributesClassName) {
		changes = append(changes, "volumeAttributesClassName to "+vac)
	}
	if len(changes) == 0 {
		return apply, nil
	}
	apply.Labels, apply.Annotations = t.Metadata.Labels, annotations
	if want != "" {
		apply.Resources = &abi.ResourceRequirements{Requests: map[string]string{storage: want}}
	}
	if vac != "" {
		apply.VolumeAttributesClassName = &vac
	}
	return apply, changes
}
