// Package reclaim tests the reclaim module end to end: `kubeplug run` with
// guests/reclaim against a real kube-apiserver and kube-controller-manager
// (persistentvolume-binder, pv-protection and pvc-protection controllers),
// deleting backing volumes through csi-test's mock CSI driver on a unix
// socket, whose servers delegate to host/csi/csitest's in-memory driver.
// TestInClusterWithDeployRBAC runs here too, as the test that uses every
// kind of right the host has: with deploy/base's service account, the rules
// kubeplug rbac prints for its host.yaml, client-go's in-cluster
// configuration, and all three modules enforcing.
package reclaim

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
			"persistentvolume-binder-controller",
			"persistentvolume-protection-controller",
			"persistentvolumeclaim-protection-controller",
		}},
	}))
}
