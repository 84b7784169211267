package policy

import (
	"strconv"
	"strings"
	"time"
)

// KEP-4650: "we update the PVC whenever we would re-create the Pod; we wait
// for the PVC to be compatible whenever we would wait for the Pod to be
// ready". So the walk picks the replicas whose claims it updates as
// kube-controller-manager 1.37 picks the pods it re-creates in a rolling
// update (pkg/controller/statefulset, with MaxUnavailableStatefulSet, beta
// and on by default since 1.37):
//
//   - OrderedReady: processReplica goes up the replicas from index 0 and
//     stops at the first that is not running and available, whatever its
//     index, so nothing is deleted while any replica is unavailable; the
//     first unavailable replica is the one worked on (created again when its
//     pod is gone). With every replica available, up to maxUnavailable pods
//     not at the update revision are deleted, highest index first, down to
//     the partition. The walk's own updates in flight are the exception: the
//     highest maxUnavailable replicas with work stay chosen while their
//     claims update, so that what is chosen depends on the state and not on
//     how far the last reconcile got (a host that crashed between two
//     applies picks the same replicas again), and never more than
//     maxUnavailable replicas are unavailable.
//   - Parallel: every unavailable pod not at the update revision at or above
//     the partition is deleted at once, then available ones, highest index
//     first, while fewer than maxUnavailable replicas are unavailable.
//
// A replica is unavailable when its pod is missing, terminating or not
// available (Ready for minReadySeconds), or, KEP-4650 "A replica is
// considered ready if the Pod is ready and all its volumes are not being
// updated in-place", when a claim of it is updating. A replica "not at the
// update revision" is one the walk has work at (see work).

// availability is which replicas are unavailable, by index.
type availability struct {
	down  []bool
	count int
	// first is the lowest index unavailable, -1 for none: where
	// OrderedReady's processReplica stops.
	first int
	// requeue is how soon a replica waiting for minReadySeconds becomes
	// available, 0 for none.
	requeue time.Duration
}

func (p *plan) availability() availability {
	av := availability{down: make([]bool, p.replicas), first: -1}
	for i := range av.down {
		ok, left := p.podAvailable(i)
		if ok && !p.claimsUpdating(i) {
			continue
		}
		av.down[i] = true
		av.count++
		if av.first < 0 {
			av.first = i
		}
		if left > 0 && (av.requeue == 0 || left < av.requeue) {
			av.requeue = left
		}
	}
	return av
}

// choose marks the replicas with work whose claims the walk may update now:
// those whose pods kube-controller-manager would re-create now.
func (p *plan) choose(work []bool, av *availability) []bool {
	chosen := make([]bool, p.replicas)
	from, budget := int(p.user), p.maxUnavailable()
	if p.set.Spec.PodManagementPolicy != "Parallel" {
		for i := p.replicas - 1; i >= from && budget > 0; i-- {
			if work[i] {
				chosen[i], budget = true, budget-1
			}
		}
		for i, down := range av.down {
			if down && !(chosen[i] && p.inProgress(i)) {
				// Something else is unavailable: only the replica
				// processReplica stops at moves, and only while it is
				// being made again or updated already; an old pod that is
				// merely not Ready is waited for, not re-created.
				clear(chosen)
				f := av.first
				chosen[f] = f >= from && work[f] && p.inProgress(f)
				return chosen
			}
		}
		return chosen
	}
	// Parallel spends the budget on the unavailable replicas first, so
	// that disruption stays within maxUnavailable.
	for i := p.replicas - 1; i >= from; i-- {
		chosen[i] = work[i] && av.down[i]
	}
	budget -= av.count
	for i := p.replicas - 1; i >= from && budget > 0; i-- {
		if work[i] && !av.down[i] {
			chosen[i], budget = true, budget-1
		}
	}
	return chosen
}

// inProgress reports whether the replica is being made again (its pod gone
// or terminating) or its claims are updating.
func (p *plan) inProgress(index int) bool { return p.podGone(index) || p.claimsUpdating(index) }

// maxUnavailable is the set's rollingUpdate.maxUnavailable as
// kube-controller-manager 1.37 reads it (getStatefulSetMaxUnavailable): a
// number, or a percentage of the replicas rounded down, and at least 1; 1
// when unset. A value it cannot read (the API server refuses such a value)
// counts as 1, the most careful.
func (p *plan) maxUnavailable() int {
	ru := p.set.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.MaxUnavailable == "" {
		return 1
	}
	s, percent := strings.CutSuffix(ru.MaxUnavailable, "%")
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 1
	}
	if percent {
		n = n * p.replicas / 100
	}
	return max(n, 1)
}
