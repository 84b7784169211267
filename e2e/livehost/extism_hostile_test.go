package livehost

import (
	"testing"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestHostileExtismPluginsAreContained: in kubeplug run, an Extism plugin
// that loops and one that eats its memory fail their calls (counted under
// their own names and kinds) while the AssemblyScript warnretain beside
// them keeps acting and the host keeps serving.
func TestHostileExtismPluginsAreContained(t *testing.T) {
	ns := namespace(t)
	kinds := map[string]string{"extism-loop": "deadline", "extism-memory-grow": "memory"}
	config := "modules:\n" + moduleYAML(guest(t, "examples/warnretain-as"), "warnretain-as", ns, "") +
		corpusYAML(t, ns, func(class string) bool { _, ok := kinds[class]; return ok })
	h := testenv.StartHost(t, testenv.HostOptions{Kubeconfig: cp.Kubeconfig, Config: config})
	h.WaitReady(t)
	createSet(t, ns, "web", 1)

	testenv.Eventually(t, wait, "warnretain-as's event and the hostile plugins' failures", func() (bool, error) {
		m, err := h.Scrape()
		if err != nil {
			return false, err
		}
		for module, kind := range kinds {
			if m.Sum("kubeplug_guest_errors_total", "module", module, "kind", kind) < 1 {
				return false, nil
			}
		}
		return len(events(t, ns, "ClaimsRetainedForever")) > 0, nil
	})
	if h.Exited() {
		t.Fatalf("the host exited:\n%s", h.Log())
	}
}
