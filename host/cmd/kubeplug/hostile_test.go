package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/runtime/hostile"
)

// The hostile corpus through `kubeplug test`, run as the built binary
// (KUBEPLUG_BIN, or built here): whatever a module of the corpus does, the
// process ends, with exit status 2 for a module the host refuses to load and 1
// for a case whose call the host stopped, naming the module and what it did,
// and none of the case's objects is harmed.

// hostileTimeout bounds one `kubeplug test` run: reaching it means the host
// failed to stop a module, not that it was slow.
const hostileTimeout = 60 * time.Second

// hostileRun is how one module of the corpus is run.
type hostileRun struct {
	// name tells the runs of one module apart.
	name string
	// cases is the case file under testdata/hostile.
	cases string
	// hostYAML is the module's entry in host.yaml after its path and name
	// (allow:, mode:, limits:); without it kubeplug test runs with no
	// --config.
	hostYAML string
	// stage, when set, is where the host stops the module run so, instead
	// of the module's Stage (which is for the default limits).
	stage hostile.Stage
	// quiet: the host bounds what the module asks without an error to
	// report (a requeue delay is clamped; kubeplug test ignores requeues).
	quiet bool
}

const allowEvent = "  allow: [{action: event, resources: [statefulsets]}]\n"

const allowLabels = "  allow: [{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels]}]\n"

// hostileRuns says how each Go guest of the corpus runs; a module not listed
// (the raw modules, which ask for nothing) runs against statefulset.yaml with
// an empty allow: list, under its class's name. Each entry
// with an allow: allows exactly what the module's manifest asks for, so that
// the module loads and what stops it is the host's own rules.
var hostileRuns = map[string][]hostileRun{
	"invalid-utf8-type":    {{cases: "statefulset.yaml", hostYAML: allowEvent}},
	"invalid-utf8-version": {{cases: "statefulset.yaml", hostYAML: allowEvent}},
	"unknown-types":        {{cases: "statefulset.yaml", hostYAML: allowEvent}},
	"empty-actions":        {{cases: "statefulset.yaml", hostYAML: allowEvent}},
	"event-flood":          {{cases: "statefulset.yaml", hostYAML: allowEvent}},
	"requeue-1ms":          {{cases: "statefulset.yaml", hostYAML: "  allow: []\n", quiet: true}},
	"requeue-huge":         {{cases: "statefulset.yaml", hostYAML: "  allow: []\n", quiet: true}},
	"beyond-allow": {
		{name: "narrower allow is refused at load", cases: "statefulset.yaml", hostYAML: allowEvent},
		{name: "shadow mode writes nothing", cases: "statefulset.yaml", hostYAML: "  mode: shadow\n", quiet: true},
	},
	"owner-unrelated": {{cases: "owner.yaml",
		hostYAML: "  allow: [{action: updateOwnerReferences, resources: [persistentvolumeclaims]}]\n"}},
	"claim-shrink": {{cases: "claims.yaml",
		hostYAML: "  allow: [{action: applyClaim, resources: [persistentvolumeclaims]}]\n"}},
	"delete-bound-volume": {{cases: "volumes.yaml",
		hostYAML: "  allow: [{action: deleteVolume}, {action: deleteObject, resources: [persistentvolumeclaims, persistentvolumes]}]\n"}},
	"named-secret": {{cases: "secret.yaml", hostYAML: "  allow: [{action: deleteVolume}]\n"}},
	// The admit hook's patch is refused, and the admission case fails
	// naming the module and the limit; both variants stop at the work
	// bound before anything is applied.
	"patch-copy-bomb": {
		{name: "copies", cases: "admission.yaml", hostYAML: allowLabels},
		{name: "copy and remove churn", cases: "admission.yaml", hostYAML: allowLabels + "  config: {churn: true}\n"},
	},
	// 9,000 actions on one claim encode to about 1 MiB: a larger output
	// limit lets them reach the action cap, and a larger cap the executor,
	// which must carry them out as one patch.
	"finalizer-flood": {
		{name: "default limits", cases: "statefulset.yaml",
			hostYAML: "  allow: [{action: addFinalizer, resources: [persistentvolumeclaims]}]\n  limits: {maxOutput: 4Mi}\n"},
		{name: "maxActions raised", cases: "statefulset.yaml", stage: hostile.StageAction, quiet: true,
			hostYAML: "  allow: [{action: addFinalizer, resources: [persistentvolumeclaims]}]\n  limits: {maxOutput: 4Mi, maxActions: 10000}\n"},
	},
}

func TestHostileCorpus(t *testing.T) {
	bin := kubeplugBin(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	guests, err := hostile.Guests(ctx, "go", dir)
	require.NoError(t, err)
	admit, err := hostile.AdmitGuests(ctx, "go", dir)
	require.NoError(t, err)
	mods := append(append(append(hostile.Raw(), hostile.Extism()...), guests...), admit...)
	cacheDir := filepath.Join(dir, "cache")

	for _, m := range mods {
		runs, ok := hostileRuns[m.Class]
		if !ok {
			runs = []hostileRun{{cases: "statefulset.yaml", hostYAML: "  allow: []\n"}}
		}
		for _, r := range runs {
			name := m.Class
			if r.name != "" {
				name += "/" + r.name
			}
			t.Run(name, func(t *testing.T) {
				runHostile(t, bin, cacheDir, m, r)
			})
		}
	}
}

func runHostile(t *testing.T, bin, cacheDir string, m hostile.Module, r hostileRun) {
	dir := t.TempDir()
	module := filepath.Join(dir, m.Class+".wasm")
	require.NoError(t, os.WriteFile(module, m.Wasm, 0o644))
	args := []string{"--cache-dir", cacheDir, "test", "-v", "--module", module}
	if r.hostYAML != "" {
		cfg := filepath.Join(dir, "host.yaml")
		yaml := fmt.Sprintf("modules:\n- path: %s\n  name: %s\n%s", module, m.Class, r.hostYAML)
		require.NoError(t, os.WriteFile(cfg, []byte(yaml), 0o644))
		args = append(args, "--config", cfg)
	}
	cases, err := filepath.Abs(filepath.Join("testdata", "hostile", r.cases))
	require.NoError(t, err)
	args = append(args, cases)

	ctx, cancel := context.WithTimeout(context.Background(), hostileTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	rss := watchRSS(cmd.Process.Pid, done)
	err = cmd.Wait()
	close(done)
	wall := time.Since(start)
	t.Logf("class %s (%s, stage %s): wall %v, peak RSS %.1f MiB", m.Class, cmp.Or(r.name, "default"), stageOf(m, r), wall.Round(time.Millisecond), float64(<-rss)/1024)
	require.NoError(t, ctx.Err(), "kubeplug test did not end within %v: the module was not stopped\n%s", hostileTimeout, tail(out.String()))

	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	text := out.String()
	if code != 0 {
		t.Logf("output: %s", head(text))
	}
	want := wantExit(stageOf(m, r), r)
	require.Equal(t, want, code, "exit status of kubeplug test %s\n%s", strings.Join(args[2:], " "), tail(text))
	switch want {
	case 0:
		require.Contains(t, text, "0 failed", tail(text))
		if !r.quiet && m.Want != "" {
			require.Contains(t, text, m.Want, "the output says what the host refused (-v)\n%s", tail(text))
		}
	default:
		require.Contains(t, text, m.Class, "the output names the module\n%s", tail(text))
		require.True(t, m.Reported(text), "the output says what the module did (%q)\n%s", m.Want, tail(text))
	}
	if want == 1 {
		// What failed is the call, not an expectation: nothing was harmed.
		require.NotContains(t, text, "not found", tail(text))
		require.NotContains(t, text, "volumeDeletes", tail(text))
	}
}

// stageOf is where the host stops m run as r.
func stageOf(m hostile.Module, r hostileRun) hostile.Stage {
	if r.stage != 0 {
		return r.stage
	}
	return m.Stage
}

// wantExit is the exit status of kubeplug test for a module stopped at stage
// and run as r: 2 for a module refused at load, 1 for a call the host stops (the case fails), 0 when the
// host refuses or bounds the module's actions and the case, which says that
// nothing was harmed, passes.
func wantExit(stage hostile.Stage, r hostileRun) int {
	if strings.Contains(r.hostYAML, "mode: shadow") {
		return 0
	}
	switch stage {
	case hostile.StageLoad:
		return 2
	case hostile.StageCall:
		return 1
	}
	return 0
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// kubeplugBin returns KUBEPLUG_BIN, or builds the command once per test
// binary into testDir.
func kubeplugBin(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("KUBEPLUG_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		require.NoError(t, err)
		return abs
	}
	binOnce.Do(func() {
		binPath = filepath.Join(testDir, "kubeplug")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("build kubeplug: %w\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// watchRSS samples the peak resident set size (VmHWM, KiB) of process pid
// every 20ms until done is closed, then sends the largest seen. The rusage of
// the ended process would not do: the child is forked sharing the test
// binary's memory, and Linux counts that into its maxrss.
func watchRSS(pid int, done <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	path := fmt.Sprintf("/proc/%d/status", pid)
	go func() {
		var peak int64
		for {
			if b, err := os.ReadFile(path); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						var kib int64
						if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kib); err == nil {
							peak = max(peak, kib)
						}
					}
				}
			}
			select {
			case <-done:
				out <- peak
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return out
}

// tail is the end of a long output, enough to see why a run failed.
func tail(s string) string {
	const n = 1500
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// head is the start of a long output.
func head(s string) string {
	const n = 1500
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
