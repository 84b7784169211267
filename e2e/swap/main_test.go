// Package swap tests hot swap on a real control plane: `kubeplug run` serves
// a steady reconcile load (50 StatefulSets scaled in a loop) while its module
// file is replaced 20 times by two builds that decide differently, then by a
// broken file, and while its host.yaml gains and loses an entry. No
// kube-controller-manager controller runs: the sets' specs and annotations
// are all the test changes, and every reconcile is the module's.
package swap

import (
	"os"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &cp, testenv.MainOptions{}))
}
