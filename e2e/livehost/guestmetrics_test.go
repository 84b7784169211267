package livehost

import (
	"testing"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestGuestMetrics: a guest that fails is counted in
// kubeplug_guest_errors_total under its module and the kind of failure (an
// error it returns is "status", a call cut off at its timeout "deadline"),
// and kubeplug_guest_call_duration_seconds times every call into a guest:
// its count keeps up with the reconciles that reach the guest.
func TestGuestMetrics(t *testing.T) {
	ns, failing := namespace(t), namespace(t)
	t.Cleanup(func() { removeFinalizers(t, ns) })
	wasm := guest(t, "e2e/guests/protect")
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig,
		Config: "modules:\n" +
			moduleYAML(wasm, "protect", ns, "") +
			moduleYAML(wasm, "fails", failing, "{fail: true}") +
			moduleYAML(wasm, "stalls", failing, spinForSeconds) + "  limits: {timeout: 100ms}\n",
	})
	h.WaitReady(t)
	scrape := func() testenv.Metrics {
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// Once protect is idle, each of its reconciles called the guest once:
	// no subject was deleted and no selector skips one.
	callsMatchReconciles := func(m testenv.Metrics) bool {
		return m.Sum("kubeplug_guest_call_duration_seconds", "module", "protect") ==
			m.Sum("kubeplug_reconciles_total", "module", "protect")
	}

	createSet(t, failing, "web", 1)
	testenv.Eventually(t, wait, "guest errors of fails and stalls", func() (bool, error) {
		m := scrape()
		return m.Sum("kubeplug_guest_errors_total", "module", "fails", "kind", "status") >= 1 &&
			m.Sum("kubeplug_guest_errors_total", "module", "stalls", "kind", "deadline") >= 1, nil
	})
	m := scrape()
	for _, c := range []struct{ module, kind string }{{"fails", "status"}, {"stalls", "deadline"}} {
		if all, want := m.Sum("kubeplug_guest_errors_total", "module", c.module), m.Sum("kubeplug_guest_errors_total", "module", c.module, "kind", c.kind); all != want {
			t.Errorf("module %s: %v guest errors, %v of them %s; want only %s", c.module, all, want, c.kind, c.kind)
		}
		if e := m.Sum("kubeplug_reconciles_total", "module", c.module, "result", "error"); e < 1 {
			t.Errorf("module %s: %v failed reconciles counted, want at least 1", c.module, e)
		}
	}
	if e := m.Sum("kubeplug_guest_errors_total", "module", "protect"); e != 0 {
		t.Errorf("%v guest errors counted against protect, which did not fail", e)
	}

	var calls float64
	for i, set := range []string{"first", "second"} {
		createSet(t, ns, set, 2)
		testenv.Eventually(t, wait, set+"'s reconciles timed", func() (bool, error) {
			n, _ := protected(t, ns)
			m := scrape()
			return n == 2*(i+1) && callsMatchReconciles(m) &&
				m.Sum("kubeplug_guest_call_duration_seconds", "module", "protect") > calls, nil
		})
		calls = scrape().Sum("kubeplug_guest_call_duration_seconds", "module", "protect")
	}
}
