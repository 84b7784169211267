// Package reclaim tests the reclaim module end to end: `kubeplug run` with
// guests/reclaim against a real kube-apiserver and kube-controller-manager
// (persistentvolume-binder, pv-protection and pvc-protection controllers),
// deleting backing volumes through a real CSI gRPC server on a unix socket.
package reclaim

import (
	"context"
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
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	cp, err = controlplane.Start(context.Background(), controlplane.Options{Controllers: []string{
		"persistentvolume-binder-controller",
		"persistentvolume-protection-controller",
		"persistentvolumeclaim-protection-controller",
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	defer testenv.Cleanup()

	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	socket = filepath.Join(dir, "csi.sock")
	driver = csitest.New(driverName)
	stop, err := driver.Serve(socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	return m.Run()
}
