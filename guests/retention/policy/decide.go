package policy

import (
	"slices"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// decide returns the actions that bring the claims of the request's
// StatefulSet to the owner references upstream's StatefulSet controller gives
// them, walking the replicas in the order its updateStatefulSet does: the
// replicas in range first, then, once upstream would get that far, the
// condemned ones.
//
// requeue is how long until upstream's pass would get further with nothing
// in the cluster changing (a pod becoming available after minReadySeconds);
// 0 when only a change can move it.
//
// A set under deletion gets nothing: upstream's updateStatefulSet only
// updates status then, and the garbage collector deletes or orphans the
// claims through the references they carry at that moment. Writing a
// reference during an orphaning deletion would leave the claim owned by a
// set that is going away, and the collector would delete it.
func decide(req *sdk.Request) (actions []abi.Action, requeue time.Duration) {
	set := req.StatefulSet()
	if set == nil || set.Metadata.DeletionTimestamp != "" || len(set.Spec.VolumeClaimTemplates) == 0 {
		return nil, 0
	}
	p := getPersistentVolumeClaimRetentionPolicy(set)
	if !p.known() {
		sdk.Log(sdk.LevelWarn, "statefulset "+req.Key()+": unknown persistentVolumeClaimRetentionPolicy (whenDeleted "+
			p.whenDeleted+", whenScaled "+p.whenScaled+"), treating it as Retain as kube-controller-manager does")
	}

	inRange, condemned := replicas(req, set)
	w := writes{left: len(req.Claims())}
	setRef := sdk.NewControllerRef(set)
	failed := false // upstream's pass over the in-range replicas ends in an error
	for _, r := range inRange {
		o := ownersOf(set, setRef, p, r, true)
		if heldBack(&o, r) {
			continue
		}
		if failsBeforeWriting(r) {
			failed = true
			continue
		}
		w.fixReplica(set, &o, r, updatesUnconditionally(r))
	}
	if len(condemned) > 0 && !failed {
		reached, wait := condemnedReached(req, set)
		if !reached {
			return w.out, wait
		}
		for _, r := range condemned {
			o := ownersOf(set, setRef, p, r, false)
			w.fixReplica(set, &o, r, false)
		}
	}
	return w.out, 0
}

// ownersOf returns the owners a replica's claims are judged against, setRef
// being the set's controller reference. A replica without a pod gets a pod
// reference without a UID, like the pod upstream is about to create.
func ownersOf(set *abi.StatefulSet, setRef abi.OwnerReference, p policy, r replica, inRange bool) owners {
	o := owners{policy: p, set: setRef, scaledDown: !inRange}
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

// writes collects a pass's actions. The actions and the references they add
// are carved from arrays that grow a few times per pass rather than a few
// times per claim: in a guest each allocation costs about as much as
// judging a claim (BENCHMARKS.md, "Issue 26: retention and reclaim").
type writes struct {
	out  []abi.Action
	left int // claims of the request not yet written: the most actions still to come, events aside
	// want is updateClaimOwnerRefForSetAndPod's answer, reused per claim;
	// added and changes back the actions' changes and their references to
	// add.
	want, added []abi.OwnerReference
	changes     []abi.OwnerReferencesChange
}

// fixReplica mirrors ClaimsMatchRetentionPolicy followed, when the claims do
// not match or always is set, by UpdatePodClaimForRetentionPolicy: a
// ConflictingController event for each claim with an unexpected controller,
// and a write for each claim that is not up to date.
func (w *writes) fixReplica(set *abi.StatefulSet, o *owners, r replica, always bool) {
	if !always && claimsMatchRetentionPolicy(o, r.claims) {
		return
	}
	for _, c := range r.claims {
		if o.hasUnexpectedController(c) {
			w.add(conflictEvent(set, o, c))
		}
		if !o.isClaimOwnerUpToDate(c) {
			w.want = o.updateClaimOwnerRefForSetAndPod(c, w.want[:0])
			w.ownerChange(c, w.want)
			w.left--
		}
	}
}

// add appends a to the pass's actions, the first time with room for one
// per claim left.
func (w *writes) add(a abi.Action) {
	if w.out == nil {
		w.out = make([]abi.Action, 0, max(w.left, 1))
	}
	w.out = append(w.out, a)
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

// ownerChange adds the updateOwnerReferences action that turns claim's
// references into want, unless they are equal already. It removes the UIDs
// want lacks and adds the references of want that the claim lacks or has in
// another form (the host replaces a reference with the same UID in place,
// which is how a reference becomes a controller reference). The order of the
// remaining references is the claim's.
func (w *writes) ownerChange(claim *abi.PersistentVolumeClaim, want []abi.OwnerReference) {
	have := claim.Metadata.OwnerReferences
	var remove []string
	for _, h := range have {
		if !slices.ContainsFunc(want, func(w abi.OwnerReference) bool { return w.UID == h.UID }) && !slices.Contains(remove, h.UID) {
			remove = append(remove, h.UID)
		}
	}
	from := len(w.added)
	for _, r := range want {
		if !slices.Contains(have, r) {
			if w.added == nil {
				w.added = make([]abi.OwnerReference, 0, max(w.left, len(want)))
			}
			w.added = append(w.added, r)
		}
	}
	if len(remove) == 0 && len(w.added) == from {
		return
	}
	var add []abi.OwnerReference
	if len(w.added) > from {
		add = w.added[from:len(w.added):len(w.added)]
	}
	// sdk.UpdateOwnerReferences's action, its change carved like the rest.
	if w.changes == nil {
		w.changes = make([]abi.OwnerReferencesChange, 0, max(w.left, 1))
	}
	w.changes = append(w.changes, abi.OwnerReferencesChange{Remove: remove, Add: add})
	w.add(abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: sdk.RefOf(claim), OwnerReferences: &w.changes[len(w.changes)-1]})
}
