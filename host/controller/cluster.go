package controller

import (
	"fmt"
	"sync"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

// CompareCluster is the compare_with label of a shadow module's comparison
// with the cluster: a module in shadow mode without compareWith is compared
// with what the cluster already shows. config refuses an entry of this name,
// so that the label always means the cluster.
const CompareCluster = "cluster"

// DefaultShadowSettle is Deps.ShadowSettle's default: how long the cluster
// has to come to what a shadow module asks before the difference is a
// disagreement. kube-controller-manager's StatefulSet controller fixes a
// condemned claim's references within one sync of the scale-down, well
// under a second on a healthy control plane; a sync it puts off for its
// own stale cache, or retries after a conflict with backoff, takes seconds.
// Thirty seconds is far above both and still tells an operator within a
// minute that the cluster does not do what the module would.
const DefaultShadowSettle = 30 * time.Second

// clusterDiffs tracks, for a module in shadow mode compared with the
// cluster, the subjects whose last reconcile asked for writes: the cluster
// does not show what the module would do there. A difference is only a
// disagreement once it has outlasted the settle time: the module may merely
// have seen a change before the controller in charge of it (a scale-down
// before kube-controller-manager's fix of the condemned claims), and then
// the next reconcile, queued by that controller's write, agrees.
//
// One entry per subject at most, dropped when the subject agrees again or
// is gone, so it is bounded by the subjects the module reconciles.
type clusterDiffs struct {
	mu    sync.Mutex
	since map[string]*clusterDiff
	// agreed is set by the first reconcile of the generation that agrees,
	// which is said once at info.
	agreed uint64
}

type clusterDiff struct {
	since    time.Time
	reported bool
}

// compareWithCluster is a shadow-mode reconcile's comparison with the
// cluster: the actions of rep that would have written (events aside: they
// say, they change nothing) are what the cluster does not show. It counts
// the reconcile as an agreement or, once the difference has outlasted the
// settle time, a disagreement, logged once per subject with what the module
// would have written, and returns when to reconcile key again to look at a
// difference that has not settled yet (0: no need).
func (c *Controller) compareWithCluster(key string, gen uint64, rep actions.Report) time.Duration {
	var writes []string
	for _, a := range rep.Actions {
		if a.Outcome == actions.Shadow && a.Type != abi.ActionEvent {
			writes = append(writes, fmt.Sprintf("%s on %s: %s", a.Type, actions.RefString(a.Target), a.Write))
		}
	}
	now := c.now()
	settle := c.deps.ShadowSettle
	m := c.deps.Metrics
	c.diffs.mu.Lock()
	defer c.diffs.mu.Unlock()
	defer c.reportDiffering()
	d := c.diffs.since[key]
	if len(writes) == 0 {
		if m != nil {
			m.ShadowAgreements.WithLabelValues(c.name, CompareCluster).Inc()
		}
		if d != nil && d.reported {
			c.log.Info("shadow agrees with the cluster again", "key", key, "compareWith", CompareCluster, "differedFor", now.Sub(d.since).Round(time.Second))
		}
		delete(c.diffs.since, key)
		if c.diffs.agreed != gen {
			c.diffs.agreed = gen
			c.log.Info("shadow agrees with the cluster: the cluster already is as the module would make it; a difference that lasts is logged and counted in kubeplug_shadow_disagreements_total",
				"key", key, "compareWith", CompareCluster, "generation", gen)
		}
		return 0
	}
	if d == nil {
		if c.diffs.since == nil {
			c.diffs.since = make(map[string]*clusterDiff)
		}
		c.diffs.since[key] = &clusterDiff{since: now}
		c.log.Debug("shadow differs from the cluster; waiting for it to settle", "key", key, "settle", settle, "writes", bounded(writes))
		return settle
	}
	if left := settle - now.Sub(d.since); left > 0 {
		return left
	}
	if !d.reported {
		d.reported = true
		if m != nil {
			m.ShadowDisagreements.WithLabelValues(c.name, CompareCluster).Inc()
		}
		c.log.Info("shadow disagrees with the cluster: it would write what the cluster does not show",
			"key", key, "compareWith", CompareCluster, "generation", gen, "since", d.since, "writes", bounded(writes))
	}
	return 0
}

// forgetDiff drops key, whose subject is gone.
func (c *Controller) forgetDiff(key string) {
	c.diffs.mu.Lock()
	defer c.diffs.mu.Unlock()
	if _, ok := c.diffs.since[key]; ok {
		delete(c.diffs.since, key)
		c.reportDiffering()
	}
}

// reportDiffering sets the gauge of differing subjects; c.diffs.mu is held.
func (c *Controller) reportDiffering() {
	if m := c.deps.Metrics; m != nil {
		m.ShadowDiffering.WithLabelValues(c.name).Set(float64(len(c.diffs.since)))
	}
}

// now is the controller's clock: Deps.Now, or time.Now.
func (c *Controller) now() time.Time {
	if c.deps.Now != nil {
		return c.deps.Now()
	}
	return time.Now()
}
