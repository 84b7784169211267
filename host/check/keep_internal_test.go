package check

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/memcluster"
)

// An unobserved run is held with only the versions the unobserved-stale
// views of the next phase's rounds show, and not at all past maxHeldBytes.
func TestHoldKeepsOnlyTheViews(t *testing.T) {
	run := func(size int64) *result {
		res := &result{rounds: []roundInfo{{phase: 1, round: 1, version: 2}, {phase: 2, round: 1, version: 6}, {phase: 2, round: 2, version: 7}}}
		for range 9 {
			res.versions = append(res.versions, memcluster.New(memcluster.Config{}))
			res.sizes = append(res.sizes, size)
		}
		return res
	}
	r := &runner{}
	res := run(1 << 20)
	require.True(t, r.hold(res, 1))
	var kept []int
	for v, c := range res.versions {
		if c != nil {
			kept = append(kept, v)
		}
	}
	require.Equal(t, []int{3, 4, 5, 6, 7}, kept, "each round of phase 2 and MaxLag versions before it")
	require.Equal(t, int64(5<<20), r.held)

	require.False(t, r.hold(run(maxHeldBytes/5), 1), "past maxHeldBytes")
	require.Equal(t, int64(5<<20), r.held, "what was not held is not counted")
}
