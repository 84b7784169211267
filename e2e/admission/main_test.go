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
