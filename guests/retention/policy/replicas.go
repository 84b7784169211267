package policy

import (
	"slices"

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
// Claims are looked up by the names upstream computes,
// <template>-<set>-<ordinal> for the set's templates, so a claim named in any
// other way is never part of a replica.
func replicas(req *sdk.Request, set *abi.StatefulSet) (inRange, condemned []replica) {
	start, end := sdk.OrdinalRange(set)

	var ordinals []int
	for _, c := range req.Claims() {
		if _, ord, ok := sdk.MatchClaim(set, c.Metadata.Name); ok && podInOrdinalRange(ord, start, end) {
			ordinals = append(ordinals, ord)
		}
	}
	slices.Sort(ordinals)
	ordinals = slices.Compact(ordinals) // one entry per ordinal, whatever the number of templates
	for _, ord := range ordinals {
		inRange = append(inRange, replica{ordinal: ord, pod: req.Pod(ord), claims: claimsOf(req, set, ord)})
	}

	for i := range req.Pods() {
		pod := &req.Pods()[i]
		name, ord, ok := sdk.ParsePodName(pod.Metadata.Name)
		if !ok || name != set.Metadata.Name || podInOrdinalRange(ord, start, end) {
			continue
		}
		if claims := claimsOf(req, set, ord); len(claims) > 0 {
			condemned = append(condemned, replica{ordinal: ord, pod: pod, claims: claims})
		}
	}
	slices.SortFunc(condemned, func(a, b replica) int { return b.ordinal - a.ordinal })
	return inRange, condemned
}

// claimsOf returns the claims of ordinal that exist, in template order.
func claimsOf(req *sdk.Request, set *abi.StatefulSet, ordinal int) []*abi.PersistentVolumeClaim {
	var out []*abi.PersistentVolumeClaim
	for i := range set.Spec.VolumeClaimTemplates {
		if c := req.ClaimFor(set.Spec.VolumeClaimTemplates[i].Metadata.Name, ordinal); c != nil {
			out = append(out, c)
		}
	}
	return out
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
// failed or succeeded, terminating, or not Running and Ready. With Parallel
// it stops only on an error.
//
// Upstream also waits minReadySeconds after Ready; the reconcile input does
// not carry it, so a set with minReadySeconds is reached that much earlier.
func condemnedReached(req *sdk.Request, set *abi.StatefulSet) bool {
	if set.Spec.PodManagementPolicy == parallel {
		return true
	}
	start, end := sdk.OrdinalRange(set)
	// Bounded by the pods: the loop ends at the first missing one.
	for ord := start; ord < end; ord++ {
		if !isRunningAndReady(req.Pod(ord)) {
			return false
		}
	}
	return true
}

// isRunningAndReady is upstream's gate for moving past a replica in
// monotonic mode: it exists, is not terminating, is Running and Ready.
func isRunningAndReady(pod *abi.Pod) bool {
	if pod == nil || pod.Metadata.DeletionTimestamp != "" || pod.Status.Phase != phaseRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == condReady {
			return c.Status == condTrue
		}
	}
	return false
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
