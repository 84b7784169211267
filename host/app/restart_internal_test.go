package app

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeplug/kubeplug/host/config"
)

// TestRestartOnly: a reload names every setting it cannot apply, apiQPS
// and shard among them (both set up once, at start).
func TestRestartOnly(t *testing.T) {
	running := &config.File{APIQPS: 50, Resync: 10 * time.Minute,
		CSIDrivers: []config.CSIDriver{{Name: "a.csi.example.com", Endpoint: "/run/csi/a.sock"}}}
	for _, tc := range []struct {
		name string
		file config.File
		want []string
	}{
		{"nothing changed", *running, nil},
		{"apiQPS and shard", config.File{APIQPS: 100, Resync: running.Resync, CSIDrivers: running.CSIDrivers,
			Shard: config.Shard{LabelSelector: labels.SelectorFromSet(labels.Set{"shard": "a"})}}, []string{"apiQPS", "shard"}},
		{"a driver added", config.File{APIQPS: 50, Resync: running.Resync, CSIDrivers: append(running.CSIDrivers[:1:1],
			config.CSIDriver{Name: "b.csi.example.com", Endpoint: "/run/csi/b.sock"})}, []string{"csiDrivers"}},
		{"resync and reconcileTimeout", config.File{APIQPS: 50, CSIDrivers: running.CSIDrivers, ReconcileTimeout: time.Minute},
			[]string{"resync", "reconcileTimeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, restartOnly(running, &tc.file))
		})
	}
}
