package app

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The reload loop is healthy before it starts, between reloads and during a
// reload within the bound; unhealthy during one past the bound, and once the
// loop has ended.
func TestReloadHealth(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	bound := 10 * time.Minute
	var h reloadHealth
	require.NoError(t, h.check(t0, bound), "before the loop starts")

	done := h.begin(t0)
	require.NoError(t, h.check(t0.Add(bound), bound), "a reload within the bound")
	err := h.check(t0.Add(bound+time.Second), bound)
	require.ErrorContains(t, err, "one reload has run for 10m1s, more than 10m0s: wedged")
	done()
	require.NoError(t, h.check(t0.Add(time.Hour), bound), "the wedged reload ended")

	h.ended.Store(true)
	require.ErrorContains(t, h.check(t0, bound), "the reload loop has ended")
}
