package runtime_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/runtime"
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

func TestGuestSeesNoFilesystemOrEnvironment(t *testing.T) {
	t.Setenv("HOME", "/home/kubeplug-test") // something the guest could leak
	m := load(t, "good", runtime.Limits{}, runtime.Options{})
	res, err := m.Reconcile(context.Background(), request("default/sandbox"))
	require.NoError(t, err)
	require.Len(t, res.Actions, 1)
	// No environment, no arguments, no directory to list, no file to read.
	require.Equal(t, `home="" environ=0 args=0 readdir=0,true readfile=true getwd="",false`, res.Actions[0].Event.Message)
}
