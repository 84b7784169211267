// Package retentionalone tests the retention module (guests/retention,
// KEP-1847) as the only implementation: kube-controller-manager runs the
// garbage collector and the claim-protection controller but not the
// StatefulSet controller, whose part the test plays with
// e2e/internal/setctl. Every owner reference on a claim is then the
// module's, and the claims the garbage collector deletes are exactly those
// the module's references say.
package retentionalone

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
			"garbage-collector-controller",
			"persistentvolumeclaim-protection-controller",
		}},
		// The subtests spend their time waiting for the host and the
		// garbage collector, not on the CPU: run them all at once.
		Parallel: 16,
	}))
}
