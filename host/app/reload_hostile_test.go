package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/bench/workload"
	"github.com/kubeplug/kubeplug/host/internal/input/inputtest"
)

// TestReloadHostileFiles: a module file or host.yaml replaced by a FIFO, a
// symlink to /dev/zero, a 100 MB file or a merge-key bomb is refused by a
// reload that returns at once, the running module going on; the corrected
// file is then applied by the next reload.
func TestReloadHostileFiles(t *testing.T) {
	h, mod, wasm, entry := newWarnHost(t)
	swaps := func(result string) float64 {
		return testutil.ToFloat64(h.m.ModuleSwaps.WithLabelValues("warn", result))
	}
	reloads := func(result string) float64 { return testutil.ToFloat64(h.m.ConfigReloads.WithLabelValues(result)) }
	reload := func(what string) { inputtest.Within(t, "a reload with "+what, func() { h.r.Reload(what) }) }
	replace := func(path, by string) {
		require.NoError(t, os.Remove(path))
		require.NoError(t, os.Symlink(by, path))
	}

	gen := 1
	for _, tt := range []struct{ name, by string }{
		{"a FIFO", inputtest.FIFO(t, "fifo")},
		{"/dev/zero", "/dev/zero"},
		{"100 MB", inputtest.Sparse(t, "big.wasm", 100<<20)},
	} {
		t.Run("module file is "+tt.name, func(t *testing.T) {
			// A path that is not a regular file refuses the configuration
			// that names it; a file too large, the module.
			failed := swaps("failed") + reloads("failed")
			replace(mod, tt.by)
			reload(tt.name)
			require.Equal(t, failed+1, swaps("failed")+reloads("failed"))
			require.True(t, hasSeries(t, h.m, "warn", fmt.Sprint(gen)), "generation %d no longer serves", gen)

			require.NoError(t, os.Remove(mod))
			require.NoError(t, os.WriteFile(mod, variant(wasm, gen), 0o644))
			reload("the module corrected")
			gen++
			require.True(t, hasSeries(t, h.m, "warn", fmt.Sprint(gen)), "the corrected module is not generation %d", gen)
		})
	}

	path := filepath.Join(h.dir, "host.yaml")
	var bomb strings.Builder
	bomb.WriteString(entry + "  config:\n    chain:\n")
	for _, n := range inputtest.MergeChain(40, "k: v") {
		bomb.WriteString("    - " + n + "\n")
	}
	for _, tt := range []struct {
		name    string
		install func()
	}{
		{"a FIFO", func() { replace(path, inputtest.FIFO(t, "fifo.yaml")) }},
		{"/dev/zero", func() { replace(path, "/dev/zero") }},
		{"a merge-key bomb", func() { h.write(t, "host.yaml", []byte(bomb.String())) }},
	} {
		t.Run("host.yaml is "+tt.name, func(t *testing.T) {
			failed := reloads("failed")
			tt.install()
			reload(tt.name)
			require.Equal(t, failed+1, reloads("failed"))
			require.True(t, hasSeries(t, h.m, "warn", fmt.Sprint(gen)))

			require.NoError(t, os.Remove(path))
			h.write(t, "host.yaml", []byte(entry+fmt.Sprintf("  config: {n: %d}\n", gen)))
			reload("host.yaml corrected")
			gen++
			require.True(t, hasSeries(t, h.m, "warn", fmt.Sprint(gen)), "the corrected configuration is not applied as generation %d", gen)
		})
	}
}

// TestReloadEndsWithContext: the watch loop's reload returns when the
// context ends, even while the reload it started cannot go on (here:
// another holds the reload lock), so a reload never keeps SIGTERM from
// stopping the host.
func TestReloadEndsWithContext(t *testing.T) {
	wasm := workload.Guest(t, "examples/warnretain")
	mod := filepath.Join(t.TempDir(), "warn.wasm")
	require.NoError(t, os.WriteFile(mod, wasm, 0o644))
	h := newTestHost(t, fmt.Sprintf("modules:\n- path: %s\n  name: warn\n%s", mod, allow["examples/warnretain"]))

	h.r.mu.Lock() // a reload that never ends
	defer h.r.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // SIGTERM
	var done bool
	inputtest.Within(t, "a reload after SIGTERM", func() { done = reload(ctx, h.r, "SIGHUP") })
	require.False(t, done)
}
