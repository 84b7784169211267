package livehost

import (
	"testing"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestExtismPluginBesideGoModules: the AssemblyScript twin of warnretain, an
// Extism plugin, runs in kubeplug run beside a Go module and acts through
// the same executor: its Warning event reaches the API server from its own
// event source, while the Go module protects the claims.
func TestExtismPluginBesideGoModules(t *testing.T) {
	ns := namespace(t)
	t.Cleanup(func() { removeFinalizers(t, ns) })
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig,
		Config: "modules:\n" +
			moduleYAML(guest(t, "examples/warnretain-as"), "warnretain-as", ns, "") +
			moduleYAML(guest(t, "e2e/guests/protect"), "protect", ns, ""),
	})
	h.WaitReady(t)
	createSet(t, ns, "web", 2)

	testenv.Eventually(t, wait, "the plugin's event and the Go module's finalizers", func() (bool, error) {
		n, _ := protected(t, ns)
		return len(events(t, ns, "ClaimsRetainedForever")) > 0 && n == 2, nil
	})
	e := events(t, ns, "ClaimsRetainedForever")[0]
	if e.InvolvedObject.Kind != "StatefulSet" || e.InvolvedObject.Name != "web" || e.Type != "Warning" {
		t.Errorf("event on %s %s of type %s, want a Warning on StatefulSet web", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type)
	}
	if e.Source.Component != "kubeplug.dev/warnretain-as" {
		t.Errorf("event source %q, want kubeplug.dev/warnretain-as", e.Source.Component)
	}
	m, err := h.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Sum("kubeplug_guest_call_duration_seconds", "module", "warnretain-as"); n < 1 {
		t.Errorf("%v calls into warnretain-as counted, want at least one", n)
	}
}
