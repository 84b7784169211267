// Package retention tests the retention module (guests/retention, KEP-1847)
// end to end beside the implementation it mirrors: `kubeplug run` and
// kube-controller-manager's statefulset-controller, garbage-collector-controller
// and persistentvolumeclaim-protection-controller run against the same
// kube-apiserver. Each scenario of the proposal's test plan runs under the four
// retention policies, twice: on Parallel sets whose pods never run (there is
// no node), and on OrderedReady sets whose pods the kubelet stand-in
// (internal/kubelet) schedules, runs and terminates, so that sets scale and
// roll one pod at a time as on a real cluster. The tests assert which claims
// survive, and that neither writer ever undoes an owner-reference write of
// the other.
package retention

import (
	"os"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &cp, testenv.MainOptions{
		ControlPlane: controlplane.Options{Controllers: []string{
			"statefulset-controller",
			"garbage-collector-controller",
			"persistentvolumeclaim-protection-controller",
		}},
		// The scenarios spend their time waiting for controllers, not on
		// the CPU: run them all at once.
		Parallel: 32,
	}))
}
