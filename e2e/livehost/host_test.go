package livehost

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

const wait = testenv.Timeout

// TestExampleModuleActs: the foundation's example module, run by kubeplug
// run, records its Warning event in the API server, from the module's own
// event source.
func TestExampleModuleActs(t *testing.T) {
	ns := namespace(t)
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig,
		Config:     "modules:\n" + moduleYAML(guest(t, "examples/warnretain"), "warnretain", ns, ""),
	})
	h.WaitReady(t)
	createSet(t, ns, "web", 2)

	testenv.Eventually(t, wait, "ClaimsRetainedForever event on web", func() (bool, error) {
		return len(events(t, ns, "ClaimsRetainedForever")) > 0, nil
	})
	e := events(t, ns, "ClaimsRetainedForever")[0]
	if e.InvolvedObject.Kind != "StatefulSet" || e.InvolvedObject.Name != "web" || e.Type != "Warning" {
		t.Errorf("event on %s %s of type %s, want a Warning on StatefulSet web", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type)
	}
	if e.Source.Component != "kubeplug.dev/warnretain" {
		t.Errorf("event source %q, want kubeplug.dev/warnretain", e.Source.Component)
	}
}

// TestUndeclaredActionIsRefused: a module that asks for an action its
// manifest does not declare gets nothing done: the object is unchanged,
// the actions after the refused one are skipped, and there is a Warning
// event and a refusal metric.
func TestUndeclaredActionIsRefused(t *testing.T) {
	ns := namespace(t)
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig,
		Config:     "modules:\n" + moduleYAML(guest(t, "e2e/guests/protect"), "protect", ns, "{overreach: true}"),
	})
	h.WaitReady(t)
	set := createSet(t, ns, "web", 2)

	testenv.Eventually(t, wait, "ActionRefused event on web", func() (bool, error) {
		return len(events(t, ns, "ActionRefused")) > 0, nil
	})
	e := events(t, ns, "ActionRefused")[0]
	if e.Type != "Warning" || e.InvolvedObject.Name != "web" || !strings.Contains(e.Message, "setPartition") {
		t.Errorf("refusal event %s on %s: %q; want a Warning on web naming setPartition", e.Type, e.InvolvedObject.Name, e.Message)
	}
	testenv.Eventually(t, wait, "refusal metric", func() (bool, error) {
		m, err := h.Scrape()
		if err != nil {
			return false, err
		}
		return m.Sum("kubeplug_actions_total", "module", "protect", "type", "setPartition", "result", "refused") >= 1 &&
			m.Sum("kubeplug_actions_total", "module", "protect", "type", "addFinalizer", "result", "skipped") >= 2, nil
	})
	got, err := client(t).AppsV1().StatefulSets(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != set.ResourceVersion {
		t.Errorf("StatefulSet changed: resourceVersion %s, created as %s", got.ResourceVersion, set.ResourceVersion)
	}
	if n, _ := protected(t, ns); n != 0 {
		t.Errorf("%d claims got the finalizer after a refused action; the rest of the result must be skipped", n)
	}
}

// TestSteadyStateMakesNoWrites: once every object is converged, resyncs
// reconcile every subject again and the host sends no write at all,
// counted at its client transport.
func TestSteadyStateMakesNoWrites(t *testing.T) {
	const sets, claims, resyncs = 10, 2, 3
	ns := namespace(t)
	t.Cleanup(func() { removeFinalizers(t, ns) })
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig,
		Config: "resync: 1s\nmodules:\n" +
			moduleYAML(guest(t, "examples/warnretain"), "warnretain", ns, "") +
			moduleYAML(guest(t, "e2e/guests/protect"), "protect", ns, ""),
	})
	h.WaitReady(t)
	for i := range sets {
		createSet(t, ns, fmt.Sprintf("set%d", i), claims)
	}

	// Converged: every claim protected, every set warned about, and the
	// host's own events about its writes recorded.
	testenv.Eventually(t, wait, "convergence", func() (bool, error) {
		n, _ := protected(t, ns)
		return n == sets*claims &&
			len(events(t, ns, "ClaimsRetainedForever")) == sets &&
			len(events(t, ns, "FinalizerAdded")) == sets*claims, nil
	})
	// One more round of resyncs, so that nothing sent before convergence
	// is still in flight when the count starts.
	reconciles := func() float64 {
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		return m.Sum("kubeplug_reconciles_total")
	}
	awaitReconciles := func(n float64) {
		testenv.Eventually(t, wait, fmt.Sprintf("%v reconciles", n), func() (bool, error) { return reconciles() >= n, nil })
	}
	awaitReconciles(reconciles() + 2*sets)

	before, err := h.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	awaitReconciles(before.Sum("kubeplug_reconciles_total") + resyncs*2*sets)
	after, err := h.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	if w := after.Writes() - before.Writes(); w != 0 {
		t.Errorf("%v writes during %d resyncs of %d converged sets; want 0", w, resyncs, sets)
	}
	if d := after.Sum("kubeplug_reconciles_total", "result", "success") - before.Sum("kubeplug_reconciles_total", "result", "success"); d < resyncs*2*sets {
		t.Errorf("%v successful reconciles during the resyncs, want at least %d", d, resyncs*2*sets)
	}
	if r := after.Sum("kubeplug_api_requests_total", "method", "GET"); r == 0 {
		t.Errorf("no GET counted at all: the transport counter is not wired")
	}
}

// TestRestartLosesAndRepeatsNothing: a host killed in the middle of its
// work, and started again, finishes exactly the work that was left: no claim
// gets the finalizer twice and none is missed.
func TestRestartLosesAndRepeatsNothing(t *testing.T) {
	const sets, claims = 60, 3
	ns := namespace(t)
	t.Cleanup(func() { removeFinalizers(t, ns) })
	for i := range sets {
		createSet(t, ns, fmt.Sprintf("set%d", i), claims)
	}
	cfg := "modules:\n" + moduleYAML(guest(t, "e2e/guests/protect"), "protect", ns, "{}")
	first := testenv.StartHost(t, testenv.HostOptions{Name: "first", Kubeconfig: cp.Kubeconfig, Config: cfg})
	testenv.Eventually(t, wait, "first host's first writes", func() (bool, error) {
		if first.Exited() {
			return false, fmt.Errorf("first host exited:\n%s", first.Log())
		}
		n, _ := protected(t, ns)
		return n > 0, nil
	})
	first.Kill()
	// A write the first host sent before it died may still be carried out
	// by the API server after the kill: count once the count holds still.
	done, total := protected(t, ns)
	for range 10 {
		time.Sleep(time.Second)
		again, _ := protected(t, ns)
		if again == done {
			break
		}
		done = again
	}
	t.Logf("killed the first host after %d of %d claims", done, total)
	if total != sets*claims {
		t.Fatalf("%d claims, want %d", total, sets*claims)
	}
	// The host's client allows 50 requests a second after a burst of 100
	// and every claim costs a patch, so 180 claims take the first host
	// more than 1.5 s; the test kills it within a poll (200 ms) of its
	// first write.
	if done >= total {
		t.Fatalf("the first host protected all %d claims before it was killed: nothing was left to test a restart with; create more claims", total)
	}

	second := testenv.StartHost(t, testenv.HostOptions{Name: "second", Kubeconfig: cp.Kubeconfig, Config: cfg})
	testenv.Eventually(t, wait, "every claim protected", func() (bool, error) {
		n, _ := protected(t, ns)
		return n == total, nil
	})
	m, err := second.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	executed := m.Sum("kubeplug_actions_total", "module", "protect", "type", "addFinalizer", "result", "executed")
	if int(executed) != total-done {
		t.Errorf("second host executed %v addFinalizer actions; %d were left when the first was killed", executed, total-done)
	}
}

// TestLeaderElection: of two hosts with --leader-elect only the holder of
// the Lease writes; when it stops, the other takes over.
func TestLeaderElection(t *testing.T) {
	ns := namespace(t)
	t.Cleanup(func() { removeFinalizers(t, ns) })
	cfg := "modules:\n" + moduleYAML(guest(t, "e2e/guests/protect"), "protect", ns, "")
	args := []string{"--leader-elect", "--leader-elect-namespace", ns, "--leader-elect-name", "kubeplug",
		"--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms"}
	leader := func(h *testenv.Host) float64 {
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		return m.Sum("kubeplug_leader")
	}
	a := testenv.StartHost(t, testenv.HostOptions{Name: "a", Kubeconfig: cp.Kubeconfig, Config: cfg,
		Args: append(args, "--leader-elect-identity", "a")})
	a.WaitReady(t)
	testenv.Eventually(t, wait, "a leads", func() (bool, error) { return leader(a) == 1, nil })
	b := testenv.StartHost(t, testenv.HostOptions{Name: "b", Kubeconfig: cp.Kubeconfig, Config: cfg,
		Args: append(args, "--leader-elect-identity", "b")})
	b.WaitReady(t)

	createSet(t, ns, "first", 2)
	testenv.Eventually(t, wait, "first set's claims protected", func() (bool, error) {
		n, _ := protected(t, ns)
		return n == 2, nil
	})
	mb, err := b.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	if w := mb.Writes(); w != 0 {
		t.Errorf("follower b made %v writes", w)
	}
	if l := mb.Sum("kubeplug_leader"); l != 0 {
		t.Errorf("follower b reports kubeplug_leader %v", l)
	}
	lease, err := client(t).CoordinationV1().Leases(ns).Get(context.Background(), "kubeplug", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "a" {
		t.Errorf("lease held by %v, want a", lease.Spec.HolderIdentity)
	}
	// The leader's health includes its renewals (client-go's check), and
	// both replicas are healthy while the leader renews.
	for _, h := range []*testenv.Host{a, b} {
		if code, body, err := testenv.Get(h.ProbeAddr, "/healthz"); err != nil || code != http.StatusOK {
			t.Errorf("%s /healthz on the probe port: %d %q %v, want 200", h.Name, code, body, err)
		}
	}

	if err := a.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatalf("a did not exit cleanly on SIGTERM: %v\n%s", err, a.Log())
	}
	testenv.Eventually(t, wait, "b takes over", func() (bool, error) { return leader(b) == 1, nil })
	createSet(t, ns, "second", 2)
	testenv.Eventually(t, wait, "second set's claims protected by b", func() (bool, error) {
		n, _ := protected(t, ns)
		return n == 4, nil
	})
	mb, err = b.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	if e := mb.Sum("kubeplug_actions_total", "module", "protect", "result", "executed"); e != 2 {
		t.Errorf("b executed %v actions after taking over, want 2", e)
	}
}

// TestMetricsAndReadiness: /readyz is 503 while the caches cannot sync (the
// API server held back by a gate), 200 after; /healthz is 200 throughout;
// both answer alike on the metrics port and on the probe port, which serves
// nothing else; /metrics carries every series the host promises.
func TestMetricsAndReadiness(t *testing.T) {
	ns := namespace(t)
	gate := testenv.NewGate(t, cp.Config.Host)
	kubeconfig := testenv.KubeconfigVia(t, cp.Kubeconfig, gate.URL())
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: kubeconfig,
		Config:     "modules:\n" + moduleYAML(guest(t, "examples/warnretain"), "warnretain", ns, ""),
	})
	testenv.Eventually(t, wait, "/readyz 503 while the API server is held back", func() (bool, error) {
		if h.Exited() {
			return false, fmt.Errorf("host exited:\n%s", h.Log())
		}
		code, body, err := h.Get("/readyz")
		return err == nil && code == http.StatusServiceUnavailable && strings.Contains(body, "caches syncing"), nil
	})
	for _, addr := range []string{h.Addr, h.ProbeAddr} {
		if code, _, err := testenv.Get(addr, "/healthz"); err != nil || code != http.StatusOK {
			t.Errorf("/healthz on %s: %d %v while syncing, want 200", addr, code, err)
		}
	}
	if code, body, err := testenv.Get(h.ProbeAddr, "/readyz"); err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "caches syncing") {
		t.Errorf("/readyz on the probe port: %d %q %v while syncing, want 503 saying why", code, body, err)
	}
	if code, _, err := testenv.Get(h.ProbeAddr, "/metrics"); err != nil || code != http.StatusNotFound {
		t.Errorf("/metrics on the probe port: %d %v, want 404: the probe port serves the probes alone", code, err)
	}
	gate.Open()
	h.WaitReady(t)
	if code, _, err := testenv.Get(h.ProbeAddr, "/readyz"); err != nil || code != http.StatusOK {
		t.Errorf("/readyz on the probe port: %d %v once ready, want 200", code, err)
	}
	createSet(t, ns, "web", 1)
	testenv.Eventually(t, wait, "an executed action", func() (bool, error) {
		m, err := h.Scrape()
		if err != nil {
			return false, err
		}
		return m.Sum("kubeplug_actions_total", "module", "warnretain", "type", "event", "result", "executed") >= 1, nil
	})
	m, err := h.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range [][]string{
		{"kubeplug_reconciles_total", "module", "warnretain", "result", "success"},
		{"kubeplug_reconciles_total", "module", "warnretain", "result", "conflict"},
		{"kubeplug_reconcile_duration_seconds", "module", "warnretain"},
		{"kubeplug_guest_call_duration_seconds", "module", "warnretain"},
		{"kubeplug_actions_total", "module", "warnretain", "type", "event", "result", "refused"},
		{"kubeplug_actions_total", "module", "warnretain", "type", "event", "result", "shadow"},
		{"kubeplug_guest_errors_total", "module", "warnretain", "kind", "deadline"},
		{"kubeplug_guest_errors_total", "module", "warnretain", "kind", "trap"},
		{"kubeplug_queue_depth", "module", "warnretain"},
		{"kubeplug_api_requests_total", "method", "GET"},
		{"kubeplug_leader"},
		{"kubeplug_module_info", "module", "warnretain", "subject", "statefulset", "mode", "enforce"},
	} {
		if !m.Has(s[0], s[1:]...) {
			t.Errorf("/metrics lacks %s%v", s[0], s[1:])
		}
	}
	if n := m.Sum("kubeplug_reconcile_duration_seconds", "module", "warnretain"); n < 1 {
		t.Errorf("reconcile latency histogram has %v samples", n)
	}
}
