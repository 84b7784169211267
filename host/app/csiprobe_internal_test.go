package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/csi"
	"github.com/kubeplug/kubeplug/host/csi/csitest"
	"github.com/kubeplug/kubeplug/host/metrics"
)

// TestCSIProber: a configured driver that does not answer shows in
// /readyz's notes, which leave the host ready, in kubeplug_csi_driver_ready
// and as one Warning event however often it is probed again; once it
// answers the note goes, with a Normal event; a driver that goes away later
// is found by the probes that go on.
func TestCSIProber(t *testing.T) {
	const driver = "fake.csi.kubeplug.dev"
	dir, err := os.MkdirTemp("", "csi") // short: a socket's path has about 100 bytes
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "csi.sock")
	volumes, err := csi.New([]config.CSIDriver{{Name: driver, Endpoint: sock, Timeout: 10 * time.Second}},
		func(context.Context, string, string) (map[string]string, error) { return nil, nil }, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = volumes.Close() })

	type event struct{ typ, reason, msg string }
	var (
		mu     sync.Mutex
		events []event
		probes atomic.Int64
	)
	recorded := func() []event {
		mu.Lock()
		defer mu.Unlock()
		return append([]event(nil), events...)
	}
	m := metrics.New()
	ready := metrics.NewReadiness("")
	p := &csiProber{
		probe: func(ctx context.Context, d string) error { probes.Add(1); return volumes.Probe(ctx, d) },
		ready: ready, gauge: m.CSIDriverReady, log: slog.New(slog.DiscardHandler),
		event: func(typ, reason, msg string) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, event{typ, reason, msg})
		},
		retry: 5 * time.Millisecond, every: 20 * time.Millisecond,
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := p.start(ctx, volumes.Drivers())
	gauge := func() float64 { return testutil.ToFloat64(m.CSIDriverReady.WithLabelValues(driver)) }
	noted := func() bool {
		for _, n := range ready.Notes() {
			if strings.HasPrefix(n, `csi driver "`+driver+`": `) {
				return true
			}
		}
		return false
	}

	require.Eventually(t, func() bool { return probes.Load() >= 4 }, time.Minute, time.Millisecond)
	require.True(t, noted(), "a driver that does not answer shows in /readyz")
	require.Contains(t, ready.Notes()[0], "GetPluginInfo")
	require.Contains(t, ready.Notes()[0], sock)
	require.Empty(t, ready.Reason(), "and leaves the host ready")
	require.Zero(t, gauge())
	ev := recorded()
	require.Len(t, ev, 1, "one Warning for the outage, however often it is probed")
	require.Equal(t, event{abi.EventWarning, ReasonCSIDriverNotReady, ev[0].msg}, ev[0])
	require.Contains(t, ev[0].msg, sock)

	f := csitest.New(driver)
	stop, err := f.Serve(sock)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !noted() }, time.Minute, time.Millisecond, "the note goes once it answers")
	require.Equal(t, 1.0, gauge())
	require.Eventually(t, func() bool { return len(recorded()) == 2 }, time.Minute, time.Millisecond)
	require.Equal(t, abi.EventNormal, recorded()[1].typ)
	require.Equal(t, ReasonCSIDriverReady, recorded()[1].reason)

	stop()
	require.Eventually(t, noted, time.Minute, time.Millisecond, "probes go on: a driver gone later shows too")
	require.Eventually(t, func() bool { return len(recorded()) == 3 }, time.Minute, time.Millisecond)
	require.Equal(t, ReasonCSIDriverNotReady, recorded()[2].reason)
	require.Zero(t, gauge())

	cancel()
	wait()
}
