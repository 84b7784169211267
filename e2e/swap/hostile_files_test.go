package swap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestHostileFileSwaps: on a running host, a module file replaced by a
// FIFO, a symlink to /dev/zero or a 100 MB file, and a host.yaml replaced
// by a FIFO, a symlink to /dev/zero or a few KB of chained merge keys, are
// each refused by a reload that ends (counted, the module running goes on,
// /readyz stays ready); the corrected host.yaml that follows is applied;
// SIGTERM then ends the host within its drain timeout. Each class logs its
// wall time and the host's peak RSS (VmHWM).
func TestHostileFileSwaps(t *testing.T) {
	client := cp.Client()
	ns := testenv.Namespace(t, client)
	warn, err := testenv.Guest("examples/warnretain")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod := filepath.Join(dir, "warn.wasm")
	install(t, warn, mod)
	entry := fmt.Sprintf("reconcileTimeout: 10s\nmodules:\n- path: %s\n  name: warn\n  namespaces: [%s]\n%s", mod, ns, testenv.Allow["examples/warnretain"])
	createSets(t, client, ns, 1)

	h := testenv.StartHost(t, testenv.HostOptions{Kubeconfig: cp.Kubeconfig, Config: entry})
	h.WaitReady(t)
	ready := watchReadiness(t, h)
	refused := func() float64 {
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		return m.Sum("kubeplug_config_reloads_total", "result", "failed") + m.Sum("kubeplug_module_swaps_total", "module", "warn", "result", "failed")
	}
	// replace puts what at path by a rename, as a deployment would.
	replace := func(path string, make func(tmp string) error) {
		tmp := path + ".new"
		if err := make(tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	fifo := func(tmp string) error { return syscall.Mkfifo(tmp, 0o644) }
	zero := func(tmp string) error { return os.Symlink("/dev/zero", tmp) }
	big := func(tmp string) error {
		f, err := os.Create(tmp)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Truncate(100 << 20) // a hole: no disk space
	}
	var bomb strings.Builder
	bomb.WriteString(entry + "  config:\n    chain:\n    - &b0 {k: v}\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&bomb, "    - &b%d {<<: [*b%d, *b%d]}\n", i, i-1, i-1)
	}
	text := func(s string) func(tmp string) error {
		return func(tmp string) error { return os.WriteFile(tmp, []byte(s), 0o644) }
	}

	for _, c := range []struct {
		class string
		path  string
		make  func(tmp string) error
	}{
		{"module file is a FIFO", mod, fifo},
		{"module file is a symlink to /dev/zero", mod, zero},
		{"module file of 100 MB", mod, big},
		{"host.yaml is a FIFO", h.ConfigPath, fifo},
		{"host.yaml is a symlink to /dev/zero", h.ConfigPath, zero},
		{"host.yaml of chained merge keys", h.ConfigPath, text(bomb.String())},
	} {
		before := refused()
		start := time.Now()
		replace(c.path, c.make)
		testenv.Eventually(t, testenv.Timeout, c.class+": the reload refused", func() (bool, error) {
			return refused() > before, nil
		})
		t.Logf("class %s: refused %v after the swap, host peak RSS %.1f MiB", c.class, time.Since(start).Round(time.Millisecond), testenv.PeakRSSMiB(t, h.PID()))
		if c.path == mod {
			install(t, warn, mod)
		}
	}
	if !strings.Contains(h.Log(), "it is a named pipe (FIFO); name the host configuration itself") {
		t.Error("the host did not log why host.yaml was refused")
	}

	// The corrected file is applied: a new generation of the module.
	start := time.Now()
	replace(h.ConfigPath, text(entry+"  config: {corrected: true}\n"))
	testenv.Eventually(t, testenv.Timeout, "the corrected host.yaml applied", func() (bool, error) {
		m, err := h.Scrape()
		return err == nil && m.Has("kubeplug_module_info", "module", "warn", "generation", "2"), err
	})
	t.Logf("corrected host.yaml applied %v after it was written", time.Since(start).Round(time.Millisecond))
	ready.halt()
	if len(ready.bad) > 0 {
		t.Errorf("/readyz was not ready %d times of %d: %v", len(ready.bad), ready.n, ready.bad)
	}

	// The drain timeout is reconcileTimeout (10s); Stop kills the host
	// after a minute, and a killed host has no exit status 0.
	start = time.Now()
	if err := h.Stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Fatalf("SIGTERM did not end the host cleanly: %v\n%s", err, h.Log())
	}
	t.Logf("SIGTERM ended the host in %v", time.Since(start).Round(time.Millisecond))
}
