// Package templateupdate tests the templateupdate module
// (guests/templateupdate, KEP-4650) end to end: `kubeplug run` with the
// templateupdate and retention modules on one host, its admission webhook
// served over HTTPS and called by the real kube-apiserver on claim
// creation, beside kube-controller-manager's statefulset-controller, with
// pods run by the kubelet stand-in (internal/kubelet) and volumes bound and
// grown by the external-resizer stand-in (internal/resizer). Each scenario
// of the proposal's user stories runs in its own namespace, all at once, and
// asserts on the API objects: the claims (spec, status, managedFields), the
// order of resizes and pod rolls, the set's partition, the
// VolumeClaimUpdate's status and conditions, and the events.
package templateupdate

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
		Parallel: 16,
	}))
}
