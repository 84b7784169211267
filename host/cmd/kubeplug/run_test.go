package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A bad host configuration or module is refused before the host connects to
// anything, with exit status 2 and a message naming the file, the field and
// what is wrong. (The host at work is tested in e2e/livehost.)
func TestRunRefusesBadConfiguration(t *testing.T) {
	module := warnretain(t)
	other := filepath.Join(t.TempDir(), "not-a-module.wasm")
	require.NoError(t, os.WriteFile(other, []byte("garbage"), 0o644))
	tests := []struct {
		name   string
		config string
		want   []string
	}{
		{"unknown field", "modules:\n- path: " + module + "\n  mdoe: shadow\n", []string{"host.yaml:3", "modules[0]", "mdoe"}},
		{"bad limit", "modules:\n- path: " + module + "\n  limits: {memory: 64Q}\n", []string{"host.yaml:3", "modules[0].limits.memory", "64Mi"}},
		{"sha256 mismatch", "modules:\n- path: " + module + "\n  sha256: " + strings.Repeat("0", 64) + "\n", []string{"sha256", strings.Repeat("0", 64)}},
		{"wrong subject", "modules:\n- path: " + module + "\n  subject: persistentvolume\n", []string{"subject", "persistentvolume", "statefulset"}},
		{"not a module", "modules:\n- path: " + other + "\n", []string{"not-a-module.wasm", "not a WebAssembly module"}},
		{"no modules", "modules: []\n", []string{"no modules"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "host.yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(tt.config), 0o644))
			// An unreachable API server: the configuration is refused
			// before the host would try it.
			_, stderr, code := kubeplug(t, "", "run", "--config", cfg, "--kubeconfig", "/nonexistent", "--metrics-bind-address", "", "--health-probe-bind-address", "0")
			require.Equal(t, exitInput, code, stderr)
			for _, w := range tt.want {
				require.Contains(t, stderr, w)
			}
		})
	}
}

func TestRunNeedsConfig(t *testing.T) {
	_, stderr, code := kubeplug(t, "", "run")
	require.Equal(t, exitInput, code)
	require.Contains(t, stderr, "--config is required")
}

// TestRunLogsAtInfo: kubeplug run logs at info unless told otherwise, as
// controllers do, so that a healthy host says what it serves and loads;
// --log-level still chooses. (The offline commands stay at warn:
// TestTestCommand's failing case leaves standard error empty.)
func TestRunLogsAtInfo(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "host.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("modules:\n- path: "+warnretain(t)+"\n  allow: [{action: event, resources: [statefulsets]}]\n"), 0o644))
	// A cluster that refuses connections: run fails once it reaches for it,
	// after it has started serving metrics.
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {token: x}}]
`), 0o600))
	for _, tc := range []struct {
		name  string
		flags []string
		info  bool
	}{
		{"by default", nil, true},
		{"at warn", []string{"--log-level", "warn"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.flags, "run", "--config", cfg, "--kubeconfig", kubeconfig, "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "0")
			_, stderr, code := kubeplug(t, "", args...)
			require.Equal(t, exitFailure, code, stderr)
			require.Contains(t, stderr, "127.0.0.1:1", "it reached for the cluster")
			require.Equal(t, tc.info, strings.Contains(stderr, `level=INFO msg="serving metrics and health"`), stderr)
		})
	}
}
