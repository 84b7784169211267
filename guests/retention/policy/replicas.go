package policy

import (
	"cmp"
	"slices"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// Pod phases and condition values the module reads.
const (
	phaseRunning = "Running"
	phasePending = "Pending"
	condReady    = "Ready"
	condTrue     = "True"
	// parallel is the podManagementPolicy upstream calls allowsBurst; every
	// other value, the default OrderedReady included, is monotonic.
	parallel = "Parallel"
)

// replica is one ordinal of the set as upstream's updateStatefulSet sees it:
// its pod, nil when it does not exist, and the claims of the set's templates
// for that ordinal that exist, in template order.
type replica struct {
	ordinal int
	pod     *abi.Pod
	claims  []*abi.PersistentVolumeClaim
}

// replicas sorts the request's claims the way upstream reaches them:
//
//   - inRange: the ordinals in [start, start+replicas) that have a claim,
//     ascending, each with its pod if it exists. Upstream reaches these
//     through the pod (processReplica) or, when the pod is missing, while it
//     creates it (CreateStatefulPod).
//   - condemned: the set's pods outside that range, by descending ordinal,
//     each with its claims. Upstream reaches a condemned claim only through
//     its pod ("Fix pod claims for condemned pods"), so the claims of a
//     condemned ordinal whose pod is gone are not here: upstream never
//     touches them again.
//
// A replica's claims are those named as upstream names them,
// <template>-<set>-<ordinal> for the set's templates (claimIndex), so a
// claim named in any other way is never part of a replica.
func replicas(req *sdk.Request, set *abi.StatefulSet) (inRange, condemned []replica) {
	start, end := sdk.OrdinalRange(set)
	x := indexClaims(req.Claims(), set)

	// The index is sorted by ordinal: one replica per ordinal that a claim
	// of a named template has, whatever the number of templates.
	for _, e := range x.entries {
		if set.Spec.VolumeClaimTemplates[e.template].Metadata.Name == "" || !podInOrdinalRange(e.ordinal, start, end) ||
			(len(inRange) > 0 && inRange[len(inRange)-1].ordinal == e.ordinal) {
			continue
		}
		if inRange == nil {
			inRange = make([]replica, 0, len(x.entries))
		}
		inRange = append(inRange, replica{ordinal: e.ordinal, pod: req.Pod(e.ordinal), claims: x.claimsOf(set, e.ordinal)})
	}

	for i := range req.Pods() {
		pod := &req.Pods()[i]
		name, ord, ok := sdk.ParsePodName(pod.Metadata.Name)
		if !ok || name != set.Metadata.Name || podInOrdinalRange(ord, start, end) {
			continue
		}
		if claims := x.claimsOf(set, ord); len(claims) > 0 {
			condemned = append(condemned, replica{ordinal: ord, pod: pod, claims: claims})
		}
	}
	slices.SortFunc(condemned, func(a, b replica) int { return b.ordinal - a.ordinal })
	return inRange, condemned
}

// claimIndex finds a replica's claims by ordinal and template without
// building their names: in a guest, a string built and hashed per claim per
// reconcile cost more than the decision (BENCHMARKS.md, "Issue 26: retention
// and reclaim"). It finds exactly the claims a lookup by the name
// <template>-<set>-<ordinal> finds, the last of the request's claims of that
// name when it has several.
type claimIndex struct {
	// entries has one entry per claim and template whose name it has,
	// sorted by ordinal and, within one, in the request's order.
	entries []claimEntry
	// claims backs the lists claimsOf returns.
	claims []*abi.PersistentVolumeClaim
}

type claimEntry struct {
	ordinal  int
	template int // index in the set's volumeClaimTemplates
	claim    *abi.PersistentVolumeClaim
}

// indexClaims indexes the claims named after one of set's templates.
func indexClaims(claims []abi.PersistentVolumeClaim, set *abi.StatefulSet) claimIndex {
	var x claimIndex
	templates := set.Spec.VolumeClaimTemplates
	for i := range claims {
		for t := range templates {
			if ord, ok := sdk.ClaimOrdinal(claims[i].Metadata.Name, templates[t].Metadata.Name, set.Metadata.Name); ok {
				if x.entries == nil {
					x.entries = make([]claimEntry, 0, len(claims))
				}
				x.entries = append(x.entries, claimEntry{ordinal: ord, template: t, claim: &claims[i]})
			}
		}
	}
	slices.SortStableFunc(x.entries, func(a, b claimEntry) int { return cmp.Compare(a.ordinal, b.ordinal) })
	return x
}

// claimsOf returns the claims of ordinal that exist, in template order.
func (x *claimIndex) claimsOf(set *abi.StatefulSet, ordinal int) []*abi.PersistentVolumeClaim {
	lo, found := slices.BinarySearchFunc(x.entries, ordinal, func(e claimEntry, ord int) int { return cmp.Compare(e.ordinal, ord) })
	if !found {
		return nil
	}
	hi := lo
	for hi < len(x.entries) && x.entries[hi].ordinal == ordinal {
		hi++
	}
	from := len(x.claims)
	for t := range set.Spec.VolumeClaimTemplates {
		var last *abi.PersistentVolumeClaim
		for _, e := range x.entries[lo:hi] {
			if e.template == t {
				last = e.claim
			}
		}
		if last != nil {
			if x.claims == nil {
				x.claims = make([]*abi.PersistentVolumeClaim, 0, len(x.entries))
			}
			x.claims = append(x.claims, last)
		}
	}
	if len(x.claims) == from {
		return nil
	}
	return x.claims[from:len(x.claims):len(x.claims)]
}

// podInOrdinalRange mirrors its upstream namesake: whether ordinal is one the
// set wants, start <= ordinal < end (upstream's end is inclusive, end-1).
func podInOrdinalRange(ordinal, start, end int) bool { return start <= ordinal && ordinal < end }

// condemnedReached reports whether upstream's updateStatefulSet, in this
// state, gets past its pass over the in-range replicas to the step that fixes
// the claims of condemned pods, which it takes just before it deletes them.
// The caller has already ruled out the pass ending in an error
// (failsBeforeWriting), which stops it in either mode.
//
// With podManagementPolicy OrderedReady (monotonic), processReplica stops the
// pass at the first replica whose pod is missing (it creates it and returns),
// failed or succeeded, terminating, not Running and Ready, or not yet
// available (isRunningAndAvailable: Ready for the set's minReadySeconds).
// With Parallel it stops only on an error.
//
// wait is how long until the pod the pass stops at becomes available, when
// that is all it lacks; 0 otherwise. Nothing in the cluster changes when it
// does, so the module asks to be reconciled again then, as upstream's
// controller enqueues the set again after minReadySeconds.
func condemnedReached(req *sdk.Request, set *abi.StatefulSet) (reached bool, wait time.Duration) {
	if set.Spec.PodManagementPolicy == parallel {
		return true, 0
	}
	start, end := sdk.OrdinalRange(set)
	minReady := time.Duration(set.Spec.MinReadySeconds) * time.Second
	// Bounded by the pods: the loop ends at the first missing one.
	for ord := start; ord < end; ord++ {
		pod := req.Pod(ord)
		if !isRunningAndReady(pod) {
			return false, 0
		}
		if ok, left := isAvailable(pod, minReady, req.Now()); !ok {
			return false, left
		}
	}
	return true, 0
}

// isRunningAndReady is upstream's gate for moving past a replica in
// monotonic mode: it exists, is not terminating, is Running and Ready.
func isRunningAndReady(pod *abi.Pod) bool {
	if pod == nil || pod.Metadata.DeletionTimestamp != "" || pod.Status.Phase != phaseRunning {
		return false
	}
	ready := readyCondition(pod)
	return ready != nil && ready.Status == condTrue
}

// isAvailable mirrors upstream's isRunningAndAvailable (podutil.IsPodAvailable)
// for a pod that is Running and Ready: with minReadySeconds 0 that is enough;
// otherwise its Ready condition's lastTransitionTime plus minReadySeconds must
// be at or before now, upstream comparing with <= 0, so a pod Ready for
// exactly minReadySeconds is available. A Ready condition without a
// transition time never is. left is how long until the pod is available: the
// rest of the wait, or minReadySeconds when it cannot be known.
func isAvailable(pod *abi.Pod, minReady time.Duration, now time.Time) (ok bool, left time.Duration) {
	if minReady <= 0 {
		return true, 0
	}
	since, err := time.Parse(time.RFC3339, readyCondition(pod).LastTransitionTime)
	if err != nil {
		return false, minReady
	}
	if left = since.Add(minReady).Sub(now); left <= 0 {
		return true, 0
	}
	return false, left
}

// readyCondition is the pod's first Ready condition, as upstream's
// GetPodCondition finds it, or nil.
func readyCondition(pod *abi.Pod) *abi.Condition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == condReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// podClaimIsStale mirrors PodClaimIsStale for a replica whose pod is about to
// be created: under whenScaled Delete, a claim that still refers to an
// earlier pod of that name is on its way out, and upstream creates neither
// pod nor claims until the garbage collector has deleted it.
func podClaimIsStale(o *owners, r replica) bool {
	if o.policy.whenScaled == retain {
		return false
	}
	for _, c := range r.claims {
		if hasStaleOwnerRef(c, &o.pod) {
			return true
		}
	}
	return false
}

func isDeleting(c *abi.PersistentVolumeClaim) bool { return c.Metadata.DeletionTimestamp != "" }
