package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
)

// blocked returns a path no one can make a directory at, root included:
// its parent is a regular file.
func blocked(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	return filepath.Join(file, "cache")
}

// run is kubeplug without the test cache directory, so that the defaults
// apply.
func runBare(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = execute(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestCacheDirDefault: with the user's cache directory unwritable (a
// read-only root filesystem), compiled modules go to a per-user directory
// under $TMPDIR; with that unwritable too, they stay in memory; either way
// the command works.
func TestCacheDirDefault(t *testing.T) {
	module := warnretain(t)
	t.Setenv("XDG_CACHE_HOME", blocked(t))
	t.Setenv("HOME", blocked(t))

	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	_, errOut, code := runBare("inspect", module)
	require.Equal(t, exitOK, code, errOut)
	entries, err := os.ReadDir(filepath.Join(tmp, "kubeplug-"+strconv.Itoa(os.Getuid()), "wazero"))
	require.NoError(t, err, "the compiled module is kept under $TMPDIR")
	require.NotEmpty(t, entries)

	t.Setenv("TMPDIR", blocked(t))
	_, errOut, code = runBare("inspect", module)
	require.Equal(t, exitOK, code, errOut)
}

// TestCacheDirGiven: a compilation cache given and unwritable is a usage
// error naming the flag; an image cache given and unwritable matters only
// to a command that pulls (see TestRegistryCommands).
func TestCacheDirGiven(t *testing.T) {
	module := warnretain(t)
	dir := blocked(t)
	_, errOut, code := runBare("--cache-dir", dir, "inspect", module)
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "--cache-dir "+dir+" is not a directory kubeplug can write")
	require.Contains(t, errOut, "--cache-dir= to keep nothing on disk")

	_, errOut, code = runBare("--cache-dir", "", "--image-cache-dir", blocked(t), "inspect", module)
	require.Equal(t, exitOK, code, errOut)
}

// TestLogFormat: --log-format json writes one JSON object per line, and
// client-go's klog lines go through the same handler at its level.
func TestLogFormat(t *testing.T) {
	var buf bytes.Buffer
	opts := &globalOptions{logLevel: "info", logFormat: "json"}
	log, err := opts.clientLogger(&buf, slog.LevelWarn)
	require.NoError(t, err)
	t.Cleanup(func() { klog.ClearLogger() })
	log.Info("host line", "module", "m")
	klog.InfoS("client-go line", "resource", "pods")
	klog.Warningf("client-go warning %d", 1)
	klog.V(5).InfoS("client-go detail")
	klog.Flush()

	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "not JSON: %s", line)
		got = append(got, rec)
	}
	require.Len(t, got, 3, buf.String())
	require.Equal(t, "host line", got[0]["msg"])
	require.Equal(t, "client-go line", got[1]["msg"])
	require.Equal(t, "pods", got[1]["resource"])
	require.Equal(t, "client-go warning 1", got[2]["msg"])

	_, errOut, code := runBare("--log-format", "xml", "run", "--config", "x.yaml")
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, `--log-format "xml": want text or json`)
}
