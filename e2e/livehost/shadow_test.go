package livehost

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestShadowModeWritesNothing: a module in shadow mode, over claims that
// all need its finalizer, sends no write to the API server and leaves every
// claim as it was, and records each action it would have taken: the shadow
// metric counts them and a debug log line names each.
func TestShadowModeWritesNothing(t *testing.T) {
	const sets, claims = 3, 2
	ns := namespace(t)
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig,
		Config:     "modules:\n" + moduleYAML(guest(t, "e2e/guests/protect"), "protect", ns, "") + "  mode: shadow\n",
		Args:       []string{"--log-level", "debug"},
	})
	h.WaitReady(t)
	var names []string
	for i := range sets {
		createSet(t, ns, fmt.Sprintf("set%d", i), claims)
		for j := range claims {
			names = append(names, fmt.Sprintf("data-set%d-%d", i, j))
		}
	}
	created := claimVersions(t, ns)

	testenv.Eventually(t, wait, "a shadow action for every claim, logged and counted", func() (bool, error) {
		m, err := h.Scrape()
		if err != nil {
			return false, err
		}
		if w := m.Writes(); w != 0 {
			return false, fmt.Errorf("%v writes in shadow mode, want 0", w)
		}
		for _, name := range names {
			if !logHas(h, "shadow mode: action not executed", "type=addFinalizer", `target="PersistentVolumeClaim `+ns+"/"+name+`"`) {
				return false, nil
			}
		}
		return m.Sum("kubeplug_actions_total", "module", "protect", "type", "addFinalizer", "result", "shadow") >= sets*claims, nil
	})
	m, err := h.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	if w := m.Writes(); w != 0 {
		t.Errorf("%v writes in shadow mode, want 0", w)
	}
	if e := m.Sum("kubeplug_actions_total", "module", "protect", "result", "executed"); e != 0 {
		t.Errorf("%v actions executed in shadow mode, want 0", e)
	}
	for name, rv := range claimVersions(t, ns) {
		if rv != created[name] {
			t.Errorf("claim %s changed in shadow mode: resourceVersion %s, created as %s", name, rv, created[name])
		}
	}
	if n, _ := protected(t, ns); n != 0 {
		t.Errorf("%d claims got the finalizer in shadow mode", n)
	}
}

// claimVersions maps each claim of ns to its resourceVersion.
func claimVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := client(t).CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range list.Items {
		out[c.Name] = c.ResourceVersion
	}
	return out
}

// logHas reports whether one line of h's log contains every part.
func logHas(h *testenv.Host, parts ...string) bool {
	for line := range strings.Lines(h.Log()) {
		found := true
		for _, p := range parts {
			found = found && strings.Contains(line, p)
		}
		if found {
			return true
		}
	}
	return false
}
