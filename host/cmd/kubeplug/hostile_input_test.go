package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/internal/input/inputtest"
	"github.com/kubeplug/kubeplug/host/runtime/hostile"
)

func TestTermSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é and 日本":          "plain text, é and 日本",
		"\x1b[2J\x1b[1;1Hclear":         `\x1b[2J\x1b[1;1Hclear`,
		"bell\a tab\t cr\r":             `bell\x07 tab\x09 cr\x0d`,
		"c1 \u009b2J csi, \u0085 nel":   `c1 \x9b2J csi, \x85 nel`,
		"bidi \u202eevil\u202c \u2066x": `bidi \u202eevil\u202c \u2066x`,
		"zero\u200bwidth \ufeffbom":     `zero\u200bwidth \ufeffbom`,
		"not utf-8 \xff\xfe":            `not utf-8 \xff\xfe`,
		`a backslash \x1b is shown`:     `a backslash \x1b is shown`,
		"line\u2028separator":           `line\u2028separator`,
	} {
		require.Equal(t, want, termSafe(in), "%q", in)
	}
	require.Equal(t, "one\n\\x1btwo", termLines("one\n\x1btwo"))
}

// evilManifest is a manifest whose strings redraw the terminal: its
// description moves the cursor up and over the capabilities printed before
// it to show harmless ones, and hides what follows.
var evilManifest = abi.Manifest{
	Name: "evil", Version: "1.0.0\x1b]0;retitled\a", ABIVersion: abi.Current.String(), Subject: abi.SubjectStatefulSet,
	Hooks: []string{abi.HookReconcile},
	Capabilities: []abi.Capability{
		{Action: abi.ActionDeleteObject, Resources: []string{"persistentvolumeclaims"}},
		{Action: abi.ActionEvent, Resources: []string{"statefulsets"}},
	},
	Description: "Harmless.\x1b[3A\x1b[2K\rCapabilities:  event on statefulsets\x1b[2K\n\x1b[8m\u009b8m\u202ehidden",
}

// TestInspectEscapesModuleStrings: module-supplied strings reach the
// terminal escaped, so the capabilities inspect prints are the ones the
// manifest asks for; JSON output keeps the strings exact.
func TestInspectEscapesModuleStrings(t *testing.T) {
	module := filepath.Join(t.TempDir(), "evil.wasm")
	require.NoError(t, os.WriteFile(module, hostile.WithManifest(evilManifest), 0o644))

	out, errOut, code := kubeplug(t, "", "inspect", module)
	require.Equal(t, exitOK, code, errOut)
	for _, c := range []string{"\x1b", "\u009b", "\u202e", "\a", "\r"} {
		require.NotContains(t, out, c, "inspect printed %q raw:\n%s", c, out)
	}
	require.Regexp(t, `(?m)^Capabilities:\s+deleteObject on persistentvolumeclaims$`, out)
	require.Contains(t, out, `Harmless.\x1b[3A\x1b[2K\x0dCapabilities:  event on statefulsets\x1b[2K`)
	require.Contains(t, out, `\x1b[8m\x9b8m\u202ehidden`)
	require.Regexp(t, `(?m)^Version:\s+1\.0\.0\\x1b\]0;retitled\\x07$`, out)

	out, errOut, code = kubeplug(t, "", "inspect", "-o", "json", module)
	require.Equal(t, exitOK, code, errOut)
	require.NotContains(t, out, "\x1b")
	var d description
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	require.Equal(t, evilManifest.Description, d.Manifest.Description)
}

// TestTestEscapesModuleStrings: kubeplug test's FAIL lines and -v rounds
// quote what a module returned (its targets' names, the host's errors
// about them), escaped for the terminal.
func TestTestEscapesModuleStrings(t *testing.T) {
	evil := abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: "default", Name: "web\x1b[2K\rPASS everything\u202e"}
	resp := &abi.Response{Status: abi.StatusOK, Result: &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionEvent, Target: evil, Event: &abi.Event{Type: abi.EventWarning, Reason: "R", Message: "m"}},
	}}}
	module := filepath.Join(t.TempDir(), "evil.wasm")
	require.NoError(t, os.WriteFile(module, hostile.Answering(evilManifest, resp), 0o644))

	out, errOut, code := kubeplug(t, "", "test", "-v", "--module", module, "testdata/failing.yaml")
	require.Equal(t, exitFailure, code, "stdout: %s\nstderr: %s", out, errOut)
	for _, c := range []string{"\x1b", "\r", "\u202e"} {
		require.NotContains(t, out, c, "kubeplug test printed %q raw:\n%s", c, out)
	}
	require.Contains(t, out, `noActions: the module returned actions: round 1 default/web: event StatefulSet default/web\x1b[2K\x0dPASS everything\u202e`)
	require.Contains(t, out, `    round 1 default/web: event StatefulSet default/web\x1b[2K\x0dPASS everything\u202e: refused`)
}

// TestTestRefusesHostileInputs: kubeplug test, given a case file that is
// a merge-key bomb, a module path that is a FIFO or /dev/zero, or a
// host.yaml that is a FIFO or a bomb, exits with an input error at once
// instead of hanging or exhausting the machine, and says what is wrong
// without repeating the input.
func TestTestRefusesHostileInputs(t *testing.T) {
	bin := kubeplugBin(t)
	dir := t.TempDir()
	var bomb strings.Builder
	bomb.WriteString("name: bomb\nconfig:\n  chain:\n")
	for _, n := range inputtest.MergeChain(40, "k: v") {
		bomb.WriteString("  - " + n + "\n")
	}
	bombCase := filepath.Join(dir, "bomb.yaml")
	require.NoError(t, os.WriteFile(bombCase, []byte(bomb.String()), 0o644))
	cases, err := filepath.Abs(filepath.Join("testdata", "hostile", "statefulset.yaml"))
	require.NoError(t, err)
	module := filepath.Join(dir, "m.wasm")
	require.NoError(t, os.WriteFile(module, hostile.WithManifest(evilManifest), 0o644))
	bombConfig := filepath.Join(dir, "host.yaml")
	require.NoError(t, os.WriteFile(bombConfig, []byte("modules:\n- path: "+module+"\n  mode: shadow\n  config:\n    chain:\n"+
		strings.ReplaceAll(bomb.String()[len("name: bomb\nconfig:\n  chain:\n"):], "  - ", "    - ")), 0o644))

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"case file of merge keys", []string{"--module", module, bombCase}, "bomb.yaml:4: config.chain expands to more than 1000000 values through aliases and merge keys"},
		{"case file is a FIFO", []string{"--module", module, inputtest.FIFO(t, "c.yaml")}, "cannot read: not a regular file: it is a named pipe (FIFO)"},
		{"module is a FIFO", []string{"--module", inputtest.FIFO(t, "m.wasm"), cases}, "it is a named pipe (FIFO); name the module file itself"},
		{"module is /dev/zero", []string{"--module", inputtest.ZeroLink(t, "m.wasm"), cases}, "it is a character device (as /dev/zero)"},
		{"module of 100 MB", []string{"--module", inputtest.Sparse(t, "m.wasm", 100<<20), cases}, "it has 100MiB, more than 64MiB, the most a module file may have"},
		{"host.yaml is a FIFO", []string{"--config", inputtest.FIFO(t, "host.yaml"), cases}, "it is a named pipe (FIFO); name the host configuration itself"},
		{"host.yaml of merge keys", []string{"--config", bombConfig, cases}, "host.yaml:6: modules[0].config.chain: expands to more than 100000 values"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"--cache-dir", filepath.Join(dir, "cache"), "test"}, tt.args...)...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			require.NoError(t, cmd.Start())
			done := make(chan struct{})
			rss := watchRSS(cmd.Process.Pid, done)
			err := cmd.Wait()
			close(done)
			t.Logf("class %s: wall %v, peak RSS %.1f MiB", tt.name, time.Since(start).Round(time.Millisecond), float64(<-rss)/1024)
			require.NoError(t, ctx.Err(), "kubeplug test did not end within a minute\n%s", tail(out.String()))
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "kubeplug test succeeded:\n%s", tail(out.String()))
			require.Equal(t, exitInput, exit.ExitCode(), tail(out.String()))
			require.Contains(t, out.String(), tt.want)
			require.Less(t, out.Len(), 2048, "the error repeats the input:\n%s", head(out.String()))
		})
	}
}
