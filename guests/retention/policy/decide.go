package policy

import (
	"slices"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// decide returns the actions that bring the claims of the request's
// StatefulSet to the owner references upstream's StatefulSet controller gives
// them, walking the replicas in the order its updateStatefulSet does: the
// replicas in range first, then, once upstream would get that far, the
// condemned ones.
//
// A set under deletion gets nothing: upstream's updateStatefulSet only
// updates status then, and the garbage collector deletes or orphans the
// claims through the references they carry at that moment. Writing a
// reference during an orphaning deletion would leave the claim owned by a
// set that is going away, and the collector would delete it.
func decide(req *sdk.Request) []abi.Action {
	set := req.StatefulSet()
	if set == nil || set.Metadata.DeletionTimestamp != "" || len(set.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	p := getPersistentVolumeClaimRetentionPolicy(set)
	if !p.known() {
		sdk.Log(sdk.LevelWarn, "statefulset "+req.Key()+": unknown persistentVolumeClaimRetentionPolicy (whenDeleted "+
			p.whenDeleted+", whenScaled "+p.whenScaled+"), treating it as Retain as kube-controller-manager does")
	}

	inRange, condemned := replicas(req, set)
	var out []abi.Action
	failed := false // upstream's pass over the in-range replicas ends in an error
	for _, r := range inRange {
		o := ownersOf(set, p, r, true)
		if heldBack(o, r) {
			continue
		}
		if failsBeforeWriting(r) {
			failed = true
			continue
		}
		out = fixReplica(out, set, o, r, updatesUnconditionally(r))
	}
	if len(condemned) > 0 && !failed && condemnedReached(req, set) {
		for _, r := range condemned {
			out = fixReplica(out, set, ownersOf(set, p, r, false), r, false)
		}
	}
	return out
}

// ownersOf returns the owners a replica's claims are judged against. A
// replica without a pod gets a pod reference without a UID, like the pod
// upstream is about to create.
func ownersOf(set *abi.StatefulSet, p policy, r replica, inRange bool) *owners {
	o := &owners{policy: p, set: sdk.NewControllerRef(set), scaledDown: !inRange}
	if r.pod != nil {
		o.pod = sdk.NewControllerRef(r.pod)
	} else {
		o.pod = abi.OwnerReference{
			APIVersion: abi.KindOf(abi.KindPod).APIVersion, Kind: abi.KindPod,
			Name: sdk.PodName(set.Metadata.Name, r.ordinal), Controller: true, BlockOwnerDeletion: true,
		}
	}
	return o
}

// updatesUnconditionally reports whether upstream calls
// UpdatePodClaimForRetentionPolicy for an in-range replica whatever
// ClaimsMatchRetentionPolicy says: when it creates the missing pod
// (CreateStatefulPod) and on every sync of a Pending pod
// (createMissingPersistentVolumeClaims). It changes no write (a claim that
// is up to date is not written) but it is where upstream records
// ConflictingController. Replicas that are held back or fail before either
// call never get here (see decide).
func updatesUnconditionally(r replica) bool {
	return r.pod == nil || r.pod.Status.Phase == phasePending
}

// heldBack reports whether upstream's processReplica leaves a replica whose
// pod is missing alone this round because one of its claims still refers to
// an earlier pod of that name (PodClaimIsStale): it creates neither pod nor
// claims and writes no claim.
func heldBack(o *owners, r replica) bool { return r.pod == nil && podClaimIsStale(o, r) }

// failsBeforeWriting reports whether upstream's processReplica fails on an
// in-range replica that is not held back before it writes any of its claims:
// creating its missing pod, or the missing claims of its Pending pod, starts
// with createPersistentVolumeClaims, which fails when one of the replica's
// claims is being deleted. The replica's other claims are not written
// either, and the failure ends the sync before the claims of condemned pods
// are fixed.
func failsBeforeWriting(r replica) bool {
	return (r.pod == nil || r.pod.Status.Phase == phasePending) && slices.ContainsFunc(r.claims, isDeleting)
}

// fixReplica mirrors ClaimsMatchRetentionPolicy followed, when the claims do
// not match or always is set, by UpdatePodClaimForRetentionPolicy: a
// ConflictingController event for each claim with an unexpected controller,
// and a write for each claim that is not up to date. It appends to out.
func fixReplica(out []abi.Action, set *abi.StatefulSet, o *owners, r replica, always bool) []abi.Action {
	if !always && claimsMatchRetentionPolicy(o, r.claims) {
		return out
	}
	for _, c := range r.claims {
		if o.hasUnexpectedController(c) {
			out = append(out, conflictEvent(set, o, c))
		}
		if !o.isClaimOwnerUpToDate(c) {
			if a, ok := ownerChange(c, o.updateClaimOwnerRefForSetAndPod(c)); ok {
				out = append(out, a)
			}
		}
	}
	return out
}

// claimsMatchRetentionPolicy mirrors ClaimsMatchRetentionPolicy: whether
// every claim of the replica is up to date.
func claimsMatchRetentionPolicy(o *owners, claims []*abi.PersistentVolumeClaim) bool {
	for _, c := range claims {
		if !o.isClaimOwnerUpToDate(c) {
			return false
		}
	}
	return true
}

// ownerChange returns the updateOwnerReferences action that turns claim's
// references into want, and false when they are equal already. It removes
// the UIDs want lacks and adds the references of want that the claim lacks
// or has in another form (the host replaces a reference with the same UID in
// place, which is how a reference becomes a controller reference). The order
// of the remaining references is the claim's.
func ownerChange(claim *abi.PersistentVolumeClaim, want []abi.OwnerReference) (abi.Action, bool) {
	have := claim.Metadata.OwnerReferences
	var remove []string
	for _, h := range have {
		if !slices.ContainsFunc(want, func(w abi.OwnerReference) bool { return w.UID == h.UID }) && !slices.Contains(remove, h.UID) {
			remove = append(remove, h.UID)
		}
	}
	var add []abi.OwnerReference
	for _, w := range want {
		if !slices.Contains(have, w) {
			add = append(add, w)
		}
	}
	if len(remove) == 0 && len(add) == 0 {
		return abi.Action{}, false
	}
	return sdk.UpdateOwnerReferences(sdk.RefOf(claim), remove, add...), true
}
