package livehost

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	corpus "github.com/kubeplug/kubeplug/host/runtime/hostile"
)

// TestWedgedHostCallsAreContained: in kubeplug run, modules whose calls
// would wedge the host inside a host function (WASI fd_read over 8 M
// iovecs, poll_oneoff over 300,000 subscriptions, an Extism plugin logging
// 24 MiB blocks in a loop) fail their calls, counted under their own
// names, while the protect module beside them keeps acting;
// /metrics answers throughout, and SIGTERM ends the host, exit 0, within
// its drain timeout. Each class's wall time to its first counted failure
// and the host's peak RSS then are logged (recorded, not asserted).
func TestWedgedHostCallsAreContained(t *testing.T) {
	ns := namespace(t)
	t.Cleanup(func() { removeFinalizers(t, ns) })
	classes := map[string]bool{"wasi-fd-read-iovecs": true, "wasi-poll-subscriptions": true, "extism-log-huge": true}
	config := "reconcileTimeout: 10s\nmodules:\n" + moduleYAML(guest(t, "e2e/guests/protect"), "protect", ns, "") +
		corpusYAML(t, ns, func(class string) bool { return classes[class] })
	h := testenv.StartHost(t, testenv.HostOptions{Kubeconfig: cp.Kubeconfig, Config: config})
	h.WaitReady(t)
	start := time.Now()
	createSet(t, ns, "web", 1)

	seen := map[string]bool{}
	testenv.Eventually(t, wait, "protect's finalizer and the hostile modules' failures", func() (bool, error) {
		if h.Exited() {
			return false, fmt.Errorf("host exited:\n%s", h.Log())
		}
		m, err := h.Scrape()
		if err != nil {
			return false, err
		}
		for class := range classes {
			if !seen[class] && m.Sum("kubeplug_guest_errors_total", "module", class, "kind", "trap") >= 1 {
				seen[class] = true
				t.Logf("%s: first failure counted %v after the StatefulSet, host peak RSS %.1f MiB", class, time.Since(start).Round(time.Millisecond), testenv.PeakRSSMiB(t, h.PID()))
			}
		}
		n, _ := protected(t, ns)
		return len(seen) == len(classes) && n == 1, nil
	})
	for class := range classes {
		if !logHas(h, class, "host call ") {
			t.Errorf("no log line says that %s's host call was refused:\n%s", class, h.Log())
		}
	}
	// The hostile modules keep being requeued; the good one keeps acting.
	createSet(t, ns, "db", 1)
	testenv.Eventually(t, wait, "protect acts on a new StatefulSet", func() (bool, error) {
		n, _ := protected(t, ns)
		return n == 2, nil
	})
	if code, _, err := h.Get("/metrics"); err != nil || code != 200 {
		t.Fatalf("/metrics answered %d, %v", code, err)
	}
	// The drain timeout is reconcileTimeout (10s): every reconcile in
	// flight ends by then, and so does the process.
	stopped := time.Now()
	if err := h.Stop(syscall.SIGTERM, wait); err != nil {
		t.Fatalf("host did not exit 0 on SIGTERM: %v\n%s", err, h.Log())
	}
	t.Logf("SIGTERM to exit: %v", time.Since(stopped).Round(time.Millisecond))
}

// corpusYAML writes the modules of the hostile corpus (raw and Extism)
// whose class is chosen to files and returns their entries of a host
// configuration, each in namespace ns with an empty allow: list.
func corpusYAML(t *testing.T, ns string, chosen func(class string) bool) string {
	t.Helper()
	dir, config := t.TempDir(), ""
	for _, m := range append(corpus.Raw(), corpus.Extism()...) {
		if !chosen(m.Class) {
			continue
		}
		path := filepath.Join(dir, m.Class+".wasm")
		if err := os.WriteFile(path, m.Wasm, 0o644); err != nil {
			t.Fatal(err)
		}
		config += fmt.Sprintf("- path: %s\n  name: %s\n  namespaces: [%s]\n  allow: []\n", path, m.Class, ns)
	}
	return config
}
