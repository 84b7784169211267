// Package crd tests deploy/crds/volumeclaimupdate-crd.yaml against the real
// kube-apiserver: that it installs, that the API server fills its defaults
// and refuses, with a message saying what is wrong, the objects its schema
// and rules refuse, that its status subresource keeps spec and status apart,
// and the columns `kubectl get vcu` prints.
package crd

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

var cp *controlplane.ControlPlane

// TestMain starts kube-apiserver and etcd, no controllers.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &cp, testenv.MainOptions{})) }

var (
	installOnce sync.Once
	installErr  error
)

// install installs the CRD from its file, once for all the tests.
func install(t *testing.T) {
	t.Helper()
	installOnce.Do(func() {
		installErr = testenv.InstallCRDs(context.Background(), cp.Config, testenv.ClaimUpdateCRD())
	})
	if installErr != nil {
		t.Fatal(installErr)
	}
}
