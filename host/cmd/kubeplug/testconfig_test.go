package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// warnretainAllow grants examples/warnretain what its manifest asks.
const warnretainAllow = "  allow: [{action: event, resources: [statefulsets]}]\n"

// writeConfig writes a host configuration into a new directory and returns
// its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "host.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// TestTestWithConfig: with --config, kubeplug test runs the module as the
// host configuration's entry says, and refuses what the live host refuses.
func TestTestWithConfig(t *testing.T) {
	module := warnretain(t)
	pass := "PASS testdata/failing.yaml: a set that keeps its claims is warned about\n"
	tests := []struct {
		name   string
		config string
		args   []string
		code   int
		out    string // a line the output must hold
		errOut []string
	}{
		{name: "the entry's module, allowed", config: "modules:\n- path: " + module + "\n" + warnretainAllow,
			code: exitFailure, out: pass},
		{name: "the entry chosen by name", config: "modules:\n- path: " + module + "\n  name: a\n  mode: shadow\n- path: " + module + "\n  name: b\n" + warnretainAllow,
			args: []string{"--module-name", "b"}, code: exitFailure, out: pass},
		{name: "--module overrides the entry's path", config: "modules:\n- path: " + module + "\n  sha256: " + strings.Repeat("0", 64) + "\n" + warnretainAllow,
			args: []string{"--module", module}, code: exitFailure, out: pass},
		{name: "out of the entry's namespaces nothing is reconciled", config: "modules:\n- path: " + module + "\n  namespaces: [prod]\n" + warnretainAllow,
			code: exitFailure, out: "PASS testdata/failing.yaml: expecting silence from a module that warns\n"},
		{name: "beyond allow", config: "modules:\n- path: " + module + "\n  allow: [{action: event, resources: [pods]}]\n",
			code: exitInput, errOut: []string{"{action: event, resources: [statefulsets]}", "allow:\n- {action: event, resources: [statefulsets]}\n"}},
		{name: "enforce without allow", config: "modules:\n- path: " + module + "\n",
			code: exitInput, errOut: []string{"has no allow: list", "or set mode: shadow"}},
		{name: "pinned file mismatch", config: "modules:\n- path: " + module + "\n  sha256: " + strings.Repeat("0", 64) + "\n" + warnretainAllow,
			code: exitInput, errOut: []string{"module digest mismatch"}},
		{name: "several modules and no name", config: "modules:\n- {path: " + module + ", name: a}\n- {path: " + module + ", name: b}\n",
			code: exitInput, errOut: []string{"has 2 modules: choose one with --module-name (a, b)"}},
		{name: "an unknown name", config: "modules:\n- path: " + module + "\n",
			args: []string{"--module-name", "nope"}, code: exitInput, errOut: []string{`has no module named "nope"; its modules are warnretain`}},
		{name: "a bad file", config: "modules:\n- path: " + module + "\n  mdoe: shadow\n",
			code: exitInput, errOut: []string{"host.yaml:3: modules[0].mdoe: unknown field"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"test", "--config", writeConfig(t, tt.config)}, tt.args...)
			out, errOut, code := kubeplug(t, "", append(args, "testdata/failing.yaml")...)
			require.Equal(t, tt.code, code, "stdout: %s\nstderr: %s", out, errOut)
			require.Contains(t, out, tt.out)
			for _, w := range tt.errOut {
				require.Contains(t, errOut, w)
			}
		})
	}
}

// TestRunRefusesModulesBeyondAllow: kubeplug run checks every module's
// manifest against its allow: list before it connects to a cluster, so a
// refused module exits 2 even with an API server that cannot be reached.
func TestRunRefusesModulesBeyondAllow(t *testing.T) {
	module := warnretain(t)
	kubeconfig := writeConfig(t, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	for _, tt := range []struct{ name, config, want string }{
		{"beyond allow", "modules:\n- path: " + module + "\n  allow: []\n", "asks for {action: event, resources: [statefulsets]}"},
		{"enforce without allow", "modules:\n- path: " + module + "\n", "has no allow: list"},
		{"a bad file", "modules:\n- path: " + module + "\n  allow: [{action: event}]\n", "modules[0].allow[0]: resources is missing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := kubeplug(t, "", "run", "--config", writeConfig(t, tt.config), "--kubeconfig", kubeconfig, "--metrics-bind-address", "", "--health-probe-bind-address", "0")
			require.Equal(t, exitInput, code, errOut)
			require.Contains(t, errOut, tt.want)
		})
	}
}

// TestRunRefusesUnsafeLeaseTimings: a renew deadline not shorter than the
// lease duration leaves no time in which a write started by a leader that
// is about to lose the Lease is sure to end; refused before connecting.
func TestRunRefusesUnsafeLeaseTimings(t *testing.T) {
	cfg := writeConfig(t, "modules:\n- path: "+warnretain(t)+"\n"+warnretainAllow)
	_, errOut, code := kubeplug(t, "", "run", "--config", cfg, "--kubeconfig", "/nonexistent", "--metrics-bind-address", "", "--health-probe-bind-address", "0",
		"--leader-elect", "--leader-elect-lease-duration", "10s", "--leader-elect-renew-deadline", "10s")
	require.Equal(t, exitInput, code, errOut)
	require.Contains(t, errOut, "renew deadline (10s) must be shorter than its lease duration (10s)")
}

func TestInspectPrintsAllowBlock(t *testing.T) {
	out, errOut, code := kubeplug(t, "", "inspect", warnretain(t))
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, "add under the module's entry in host.yaml:\n  allow:\n  - {action: event, resources: [statefulsets]}\n")
}

// inspect says what RBAC a module needs once granted what it asks, in text
// and in JSON, as kubeplug rbac derives it for a host running the module.
func TestInspectPrintsTheModulesRBAC(t *testing.T) {
	out, errOut, code := kubeplug(t, "", "inspect", warnretain(t))
	require.Equal(t, exitOK, code, errOut)
	require.Regexp(t, `(?m)^RBAC:\s+create, patch events\n\s+\(once granted what it asks`, out)

	out, errOut, code = kubeplug(t, "", "inspect", "-o", "json", warnretain(t))
	require.Equal(t, exitOK, code, errOut)
	var d description
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	require.Len(t, d.RBAC.Cluster, 1)
	require.Equal(t, []string{"events"}, d.RBAC.Cluster[0].Resources)
	require.Equal(t, []string{"create", "patch"}, d.RBAC.Cluster[0].Verbs)
	require.Empty(t, d.RBAC.Namespaced)
}
