package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/metrics"
)

func TestLabel(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"kept", "1.2.3", "1.2.3"},
		{"invalid UTF-8 replaced", "1.0\xff", "1.0\uFFFD"},
		{"cut to 128 bytes", strings.Repeat("v", 300), strings.Repeat("v", 128)},
		{"cut on a rune boundary", strings.Repeat("v", 127) + "é", strings.Repeat("v", 127)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := metrics.Label(tc.in)
			require.Equal(t, tc.want, got)
			// What client_golang would panic on, it takes.
			m := metrics.New()
			require.NotPanics(t, func() {
				m.ModuleInfo.With(prometheus.Labels{"module": "m", "version": got, "subject": "s", "mode": "enforce", "sha256": "x", "generation": "1"}).Set(1)
			})
		})
	}
}
