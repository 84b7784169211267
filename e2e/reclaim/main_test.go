// Package reclaim tests the reclaim module end to end: `kubeplug run` with
// guests/reclaim against a real kube-apiserver and kube-controller-manager
// (persistentvolume-binder, pv-protection and pvc-protection controllers),
// deleting backing volumes through a real CSI gRPC server on a unix socket.
package reclaim

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

// driverName is the CSI driver the host is configured to act for.
const driverName = "csi.e2e.kubeplug.dev"

var (
	cp     *controlplane.ControlPlane
	driver *csitest.Driver
	socket string
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &cp, testenv.MainOptions{
		ControlPlane: controlplane.Options{Controllers: []string{
			"persistentvolume-binder-controller",
			"persistentvolume-protection-controller",
			"persistentvolumeclaim-protection-controller",
		}},
		Setup: serveDriver,
	}))
}

// serveDriver serves driver on socket, in a directory of its own, until the
// function it returns is called.
func serveDriver() (func(), error) {
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		return nil, fmt.Errorf("serve csi driver %s: %w", driverName, err)
	}
	socket = filepath.Join(dir, "csi.sock")
	driver = csitest.New(driverName)
	stop, err := driver.Serve(socket)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("serve csi driver %s: %w", driverName, err)
	}
	return func() {
		stop()
		os.RemoveAll(dir)
	}, nil
}
