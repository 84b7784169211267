package runtime_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/host/runtime/hostile"
)

// Every runtime-level hostile module is contained: refused at load, or its
// call ends with an error that names the module, the key and the reason,
// and a well-behaved module loaded beside it keeps serving. Each class's
// wall time and the process's peak RSS are logged (recorded, not asserted).
func TestHostileRaw(t *testing.T) {
	limits := runtime.Limits{Instances: 1} // the defaults: a 1s deadline, a 128 MiB memory cap
	eng := newEngine(t, runtime.Options{})
	good, err := eng.Load(context.Background(), "good.wasm", guest(t, "good"), limits)
	require.NoError(t, err)

	for _, h := range hostile.Raw() {
		t.Run(h.Class, func(t *testing.T) {
			ctx := context.Background()
			source := h.Class + ".wasm"
			start := time.Now()
			defer func() {
				t.Logf("%s: %v wall, peak RSS %s", h.Class, time.Since(start).Round(time.Millisecond), peakRSS(t))
			}()

			m, err := eng.Load(ctx, source, h.Wasm, limits)
			if h.Stage == hostile.StageLoad {
				require.Error(t, err)
				require.ErrorContains(t, err, `load module "`+source+`"`)
				require.ErrorContains(t, err, h.Want)
				return
			}
			require.NoError(t, err)
			defer m.Close(ctx)
			called := time.Now()
			_, err = m.Reconcile(ctx, request("default/web"))
			t.Logf("%s: the call took %v", h.Class, time.Since(called).Round(time.Millisecond))
			var ce *runtime.CallError
			require.True(t, errors.As(err, &ce), "%v", err)
			require.Equal(t, "hostile", ce.Module)
			require.Equal(t, "default/web", ce.Key)
			require.True(t, h.Reported(err.Error()), "%v does not say %q", err, h.Want)
			if strings.Contains(err.Error(), "deadline exceeded after") {
				// within the deadline and its slack: the checkpoints, not
				// the guest's own end, stopped it
				require.ErrorIs(t, err, runtime.KindDeadline)
			}
			_, err = good.Reconcile(ctx, request("default/other"))
			require.NoError(t, err, "another module keeps serving")
		})
	}
}

// peakRSS is the process's peak resident set (VmHWM).
func peakRSS(t *testing.T) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// Closing a module whose drain timeout has passed closes its memory under a
// call still running in it (here: filling 63 MiB in a loop). The call fails;
// the host's process must not crash (an unmapped memory under a running
// guest would be a segmentation fault).
func TestCloseUnderRunningCallKeepsTheHostUp(t *testing.T) {
	eng := newEngine(t, runtime.Options{})
	m, err := eng.Load(context.Background(), "bulk-fill.wasm", rawModule(t, "bulk-fill"), runtime.Limits{Instances: 1, Deadline: 10 * time.Second})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := m.Reconcile(context.Background(), request("default/web"))
		done <- err
	}()
	require.Eventually(t, func() bool { return m.Stats().Busy == 1 }, 10*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond) // let the guest get into its loop: not an assertion
	expired, cancel := context.WithCancel(context.Background())
	cancel() // no drain: close under the call
	_ = m.Close(expired)
	err = <-done
	require.Error(t, err)
	require.ErrorIs(t, err, runtime.ErrClosed)
}
