package runtime_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/host/runtime/hostile"
)

func TestGuestLogsReachLogger(t *testing.T) {
	sink := &logSink{}
	m := load(t, "good", runtime.Limits{}, runtime.Options{Logger: sink.logger()})
	_, err := m.Reconcile(context.Background(), request("default/log"))
	require.NoError(t, err)

	var got []logRecord
	for _, r := range sink.all() {
		require.Equal(t, "good", r.Attrs["module"], "every record names the module: %+v", r)
		got = append(got, r)
	}
	long := strings.Repeat("x", 4096)
	require.Equal(t, []logRecord{
		{Level: slog.LevelWarn, Message: "hello from default/log", Attrs: map[string]any{"module": "good"}},
		{Level: slog.LevelInfo, Message: long, Attrs: map[string]any{"module": "good", "truncated": true}},
		{Level: slog.LevelInfo, Message: "stdout line one", Attrs: map[string]any{"module": "good", "stream": "stdout"}},
		{Level: slog.LevelInfo, Message: strings.Repeat("y", 4096), Attrs: map[string]any{"module": "good", "stream": "stdout", "truncated": true}},
		{Level: slog.LevelInfo, Message: "stdout line two", Attrs: map[string]any{"module": "good", "stream": "stdout"}},
		{Level: slog.LevelInfo, Message: "stdout line three", Attrs: map[string]any{"module": "good", "stream": "stdout"}},
		{Level: slog.LevelWarn, Message: "stderr line", Attrs: map[string]any{"module": "good", "stream": "stderr"}},
	}, got)
}

func TestGuestSeesNoFilesystemOrHostEnvironment(t *testing.T) {
	t.Setenv("HOME", "/home/kubeplug-test") // something the guest could leak
	m := load(t, "good", runtime.Limits{}, runtime.Options{})
	res, err := m.Reconcile(context.Background(), request("default/sandbox"))
	require.NoError(t, err)
	require.Len(t, res.Actions, 1)
	// No environment but the Go runtime's GODEBUG (godebug.go), no
	// arguments, no directory to list, no file to read.
	require.Equal(t, `home="" environ=["GODEBUG=gcstoptheworld=1"] args=0 readdir=0,true readfile=true getwd="",false`, res.Actions[0].Event.Message)
}

// A guest that floods its output (64 MiB of newlines per fd_write, 1,024
// iovecs over them, kubeplug_write_log in a loop) costs the host a bounded
// number of records per call: at most the budget's 256, then one record
// saying how much was dropped. Empty lines are no records at all.
func TestGuestLogFloodIsBounded(t *testing.T) {
	for _, class := range []string{"log-fd-write", "log-fd-write-iovecs", "log-write-log"} {
		t.Run(class, func(t *testing.T) {
			sink := &logSink{}
			eng := newEngine(t, runtime.Options{Logger: sink.logger()})
			h := rawHostile(t, class)
			// Three times the default deadline: instantiating 1,040 pages
			// and filling 64 MiB with newlines come before the first
			// write, and on a loaded machine they took the whole default
			// second, leaving nothing written and so nothing dropped.
			m, err := eng.Load(context.Background(), class+".wasm", h.Wasm, runtime.Limits{Instances: 1, Deadline: 3 * runtime.DefaultDeadline})
			require.NoError(t, err)
			_, err = m.Reconcile(context.Background(), request("default/flood"))
			require.Error(t, err)
			require.True(t, h.Reported(err.Error()), "%v does not say %q", err, h.Want)
			if strings.Contains(err.Error(), "deadline exceeded after") {
				require.ErrorIs(t, err, runtime.KindDeadline)
			}

			records, dropped := 0, 0
			for _, r := range sink.all() {
				if r.Message == "guest output over the per-call budget was dropped" {
					dropped++
					require.Positive(t, r.Attrs["droppedBytes"].(int64)+r.Attrs["droppedRecords"].(int64), "%+v", r)
					continue
				}
				require.NotEmpty(t, r.Message, "an empty line became a record")
				records++
			}
			require.LessOrEqual(t, records, 256)
			require.Equal(t, 1, dropped, "one record says what the call dropped")
		})
	}
}

// rawModule is the module of the given class of hostile.Raw.
func rawModule(t *testing.T, class string) []byte {
	t.Helper()
	return rawHostile(t, class).Wasm
}

// rawHostile is the given class of hostile.Raw.
func rawHostile(t *testing.T, class string) hostile.Module {
	t.Helper()
	for _, h := range hostile.Raw() {
		if h.Class == class {
			return h
		}
	}
	t.Fatalf("no hostile module of class %q", class)
	return hostile.Module{}
}
