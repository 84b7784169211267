package faults

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
)

// kcmStaleSkips reads, from the in-process kube-controller-manager's
// metrics, how many syncs of StatefulSets its StatefulSet controller put
// off, by resource, because that resource's informer had not yet shown a
// write of its own: statefulset_controller_stale_sync_skips_total, of the
// feature gate StaleControllerConsistencyStatefulSet (beta, on by default
// since 1.36). The counter is the process's, across runs: a run compares
// two readings.
func kcmStaleSkips() (map[string]float64, error) {
	fams, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "statefulset_controller_stale_sync_skips_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "resource" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out, nil
}

// skipsSince says how many more syncs were put off now than at from, by
// resource: "none" when none were.
func skipsSince(from, now map[string]float64) string {
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(now)) {
		if d := now[r] - from[r]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", r, d))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func TestSkipsSince(t *testing.T) {
	from := map[string]float64{"pods": 3}
	now := map[string]float64{"pods": 3, "persistentvolumeclaims": 2, "statefulsets": 1}
	if got, want := skipsSince(from, now), "persistentvolumeclaims 2, statefulsets 1"; got != want {
		t.Errorf("skipsSince = %q, want %q", got, want)
	}
	if got := skipsSince(now, now); got != "none" {
		t.Errorf("skipsSince with no new skips = %q, want none", got)
	}
}
