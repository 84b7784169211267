package livehost

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	corpus "github.com/kubeplug/kubeplug/host/runtime/hostile"
)

// TestHostileExtismPluginsAreContained: in kubeplug run, an Extism plugin
// that loops and one that eats its memory fail their calls (counted under
// their own names and kinds) while the AssemblyScript warnretain beside
// them keeps acting and the host keeps serving.
func TestHostileExtismPluginsAreContained(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	config := "modules:\n" + moduleYAML(guest(t, "examples/warnretain-as"), "warnretain-as", ns, "")
	kinds := map[string]string{"extism-loop": "deadline", "extism-memory-grow": "memory"}
	for _, m := range corpus.Extism() {
		if _, ok := kinds[m.Class]; !ok {
			continue
		}
		path := filepath.Join(dir, m.Class+".wasm")
		if err := os.WriteFile(path, m.Wasm, 0o644); err != nil {
			t.Fatal(err)
		}
		config += fmt.Sprintf("- path: %s\n  name: %s\n  namespaces: [%s]\n  allow: []\n", path, m.Class, ns)
	}
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
