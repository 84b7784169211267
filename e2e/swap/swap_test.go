package swap

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

const (
	swaps = 20
	sets  = 50
	// hostPod is the Pod the host records its own Warning events on, as
	// the downward API would name it.
	hostPod = "kubeplug-swap-e2e"
)

// window is one generation of the module: its version, when its file was
// written, and the last tick written before the host was seen serving it.
type window struct {
	version string
	written time.Time
	served  int64
}

// TestSwap: the module file is replaced 20 times under load, alternating two
// builds; every reconcile of a state written after a swap was seen and
// ended before the next swap's file was written is answered by the new
// build; no reconcile fails, the last state of every set is reconciled,
// /readyz stays ready. Then a broken file leaves the last build serving and
// is reported; an entry added to host.yaml starts its controller and, removed,
// stops it.
func TestSwap(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "default")
	t.Setenv("POD_NAME", hostPod)
	client := cp.Client()
	ns := testenv.Namespace(t, client)
	dir := t.TempDir()
	builds := map[string]string{"a": variant(t, dir, "a"), "b": variant(t, dir, "b")}
	warn, err := testenv.Guest("examples/warnretain")
	if err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(dir, "swapver.wasm")
	install(t, builds["a"], mod)
	swapEntry := fmt.Sprintf("modules:\n- path: %s\n  name: swap\n  workers: 4\n  namespaces: [%s]\n  allow: []\n", mod, ns)
	names := createSets(t, client, ns, sets)

	h := testenv.StartHost(t, testenv.HostOptions{Kubeconfig: cp.Kubeconfig, Config: swapEntry})
	h.WaitReady(t)
	ready := watchReadiness(t, h)
	l := startLoad(t, cp.Config, ns, names)

	// Generation 1 is version a, from the start.
	wins := []window{{version: "a"}}
	var latencies []time.Duration
	awaitAnswers := func(after int64, n int) {
		testenv.Eventually(t, testenv.Timeout, fmt.Sprintf("%d answers to ticks after %d", n, after), func() (bool, error) {
			got := 0
			for _, a := range answers(t, h.Log()) {
				if a.tick > after {
					got++
				}
			}
			return got >= n, nil
		})
	}
	awaitAnswers(0, 20)
	for k := 1; k <= swaps; k++ {
		v := "b"
		if k%2 == 0 {
			v = "a"
		}
		gen := uint64(k + 1)
		written := time.Now()
		install(t, builds[v], mod)
		var served time.Time
		testenv.Eventually(t, testenv.Timeout, fmt.Sprintf("generation %d serving", gen), func() (bool, error) {
			var ok bool
			served, ok = firstCall(h.Log(), "swap", gen)
			return ok, nil
		})
		wins = append(wins, window{version: v, written: written, served: l.tick.Load()})
		latencies = append(latencies, served.Sub(written))
		awaitAnswers(wins[k].served, 10)
	}
	slices.Sort(latencies)
	t.Logf("swap latency, file written to first call served by the new generation, %d swaps under load: min %v, median %v, max %v",
		len(latencies), latencies[0], latencies[len(latencies)/2], latencies[len(latencies)-1])

	// Every answer to a tick written after generation k was seen serving,
	// logged before generation k+1's file was written, is generation k's.
	checked := make([]int, len(wins))
	for _, a := range answers(t, h.Log()) {
		k := 0
		for i := range wins {
			if a.tick > wins[i].served {
				k = i
			}
		}
		if k+1 < len(wins) && !a.at.Add(time.Millisecond).Before(wins[k+1].written) {
			continue // generation k+1 may have answered it
		}
		checked[k]++
		if a.version != wins[k].version {
			t.Errorf("tick %d of %s, written after generation %d (version %s) served, was answered by version %s at %s",
				a.tick, a.set, k+1, wins[k].version, a.version, a.at)
		}
	}
	for k, n := range checked {
		if n == 0 {
			t.Errorf("no answer checked for generation %d: the check is empty", k+1)
		}
	}
	t.Logf("answers checked per generation: %v", checked)

	m, err := h.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	for _, result := range []string{"error", "conflict", "refused"} {
		if n := m.Sum("kubeplug_reconciles_total", "module", "swap", "result", result); n != 0 {
			t.Errorf("%v reconciles with result %s during the swaps", n, result)
		}
	}
	if n := m.Sum("kubeplug_guest_errors_total", "module", "swap"); n != 0 {
		t.Errorf("%v guest errors during the swaps", n)
	}
	if n := m.Sum("kubeplug_module_swaps_total", "module", "swap", "result", "success"); n != swaps {
		t.Errorf("kubeplug_module_swaps_total{result=success} = %v, want %d", n, swaps)
	}
	if !m.Has("kubeplug_module_info", "module", "swap", "generation", fmt.Sprint(swaps+1)) {
		t.Errorf("kubeplug_module_info does not show generation %d", swaps+1)
	}
	served := wins[swaps].version

	t.Run("broken module keeps the old one serving", func(t *testing.T) {
		writeFile(t, mod, []byte("not a wasm module"))
		testenv.Eventually(t, testenv.Timeout, "the failed swap counted", func() (bool, error) {
			m, err := h.Scrape()
			return err == nil && m.Sum("kubeplug_module_swaps_total", "module", "swap", "result", "failed") >= 1, err
		})
		if !strings.Contains(h.Log(), "reload refused") {
			t.Error("the host did not log why the module was refused")
		}
		testenv.Eventually(t, testenv.Timeout, "the Warning event on the host's pod", func() (bool, error) {
			for _, e := range testenv.Events(t, client, "default", "ModuleRejected") {
				if e.InvolvedObject.Name == hostPod && e.Type == "Warning" && strings.Contains(e.Message, "keeps serving") {
					return true, nil
				}
			}
			return false, nil
		})
		after := l.tick.Load()
		awaitAnswers(after, 10)
		for _, a := range answers(t, h.Log()) {
			if a.tick > after && a.version != served {
				t.Errorf("tick %d answered by version %s after the broken swap; version %s was serving", a.tick, a.version, served)
			}
		}
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		if !m.Has("kubeplug_module_info", "module", "swap", "generation", fmt.Sprint(swaps+1)) {
			t.Error("the generation changed on a broken module")
		}
	})

	t.Run("entries added and removed", func(t *testing.T) {
		warnEntry := fmt.Sprintf("- path: %s\n  name: warn\n  namespaces: [%s]\n%s", warn, ns, testenv.Allow["examples/warnretain"])
		writeFile(t, h.ConfigPath, []byte(swapEntry+warnEntry))
		testenv.Eventually(t, testenv.Timeout, "the added module's controller", func() (bool, error) {
			m, err := h.Scrape()
			return err == nil && m.Has("kubeplug_module_info", "module", "warn") &&
				m.Sum("kubeplug_reconciles_total", "module", "warn") >= sets, err
		})
		testenv.Eventually(t, testenv.Timeout, "the added module's warnings", func() (bool, error) {
			return len(testenv.Events(t, client, ns, "ClaimsRetainedForever")) > 0, nil
		})

		writeFile(t, h.ConfigPath, []byte(swapEntry))
		testenv.Eventually(t, testenv.Timeout, "the removed module's controller gone", func() (bool, error) {
			m, err := h.Scrape()
			return err == nil && !m.Has("kubeplug_module_info", "module", "warn"), err
		})
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		before := m.Sum("kubeplug_reconciles_total", "module", "warn")
		after := l.tick.Load()
		awaitAnswers(after, 2*sets) // every set changed again, and the swap module answered
		if m, err = h.Scrape(); err != nil {
			t.Fatal(err)
		}
		if got := m.Sum("kubeplug_reconciles_total", "module", "warn"); got != before {
			t.Errorf("the removed module reconciled %v more times", got-before)
		}
	})

	t.Run("SIGHUP reloads", func(t *testing.T) {
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		before := m.Sum("kubeplug_config_reloads_total", "result", "success")
		if err := syscall.Kill(h.PID(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, testenv.Timeout, "a reload on SIGHUP", func() (bool, error) {
			m, err := h.Scrape()
			return err == nil && strings.Contains(h.Log(), `msg=reloading reason=SIGHUP`) &&
				m.Sum("kubeplug_config_reloads_total", "result", "success") > before, err
		})
	})

	l.halt()
	l.mu.Lock()
	last, errs := l.last, l.errs
	l.mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("%d writes of the load failed, the first: %v", len(errs), errs[0])
	}
	testenv.Eventually(t, testenv.Timeout, "the last state of every set reconciled", func() (bool, error) {
		seen := map[string]int64{}
		for _, a := range answers(t, h.Log()) {
			seen[a.set] = max(seen[a.set], a.tick)
		}
		for name, tick := range last {
			if seen[name] < tick {
				return false, nil
			}
		}
		return true, nil
	})
	ready.halt()
	if len(ready.bad) > 0 {
		t.Errorf("/readyz was not ready %d times of %d: %v", len(ready.bad), ready.n, ready.bad)
	}
	t.Logf("/readyz polled %d times, ready every time; %d ticks written", ready.n, l.tick.Load())
	_ = os.Remove(mod)
}
