// Package admission tests the admit hook end to end: `kubeplug run
// --webhook-addr` serving modules as admission webhooks that the real
// kube-apiserver calls, registered with the output of `kubeplug
// webhook-config`.
package admission

import (
	"os"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

var cp *controlplane.ControlPlane

// TestMain starts kube-apiserver and etcd but no controllers: the claims
// the test needs it creates itself. Webhooks registered by Service are
// called where resolveService says.
func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &cp, testenv.MainOptions{
		ControlPlane: controlplane.Options{ServiceResolver: resolveService},
	}))
}

// guest is testenv.Guest, failing t when the guest does not build.
func guest(t *testing.T, dir string) string {
	t.Helper()
	p, err := testenv.Guest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// keepsReconciling checks that h's /metrics answers and that module
// reconciles at least twice more. One scrape may wait past its 5 s on a
// machine a flood keeps busy; /metrics must answer within wait.
func keepsReconciling(t *testing.T, h *testenv.Host, module, what string) {
	t.Helper()
	var before float64
	testenv.Eventually(t, wait, what+": /metrics to answer", func() (bool, error) {
		m, err := h.Scrape()
		if err != nil {
			t.Logf("%s: /metrics: %v", what, err)
			return false, nil
		}
		before = m.Sum("kubeplug_reconciles_total", "module", module, "result", "success")
		return true, nil
	})
	testenv.Eventually(t, wait, what+": "+module+" to keep reconciling", func() (bool, error) {
		m, err := h.Scrape()
		return err == nil && m.Sum("kubeplug_reconciles_total", "module", module, "result", "success") >= before+2, nil
	})
}
