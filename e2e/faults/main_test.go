package faults

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
			"persistentvolume-binder-controller",
			"persistentvolume-protection-controller",
			"persistentvolumeclaim-protection-controller",
		}},
	}))
}
