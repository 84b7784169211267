package reclaim

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/driver"
	"go.uber.org/mock/gomock"

	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

// driverName is the CSI driver the host is configured to act for.
const driverName = "csi.e2e.kubeplug.dev"

// csiDriver is the CSI driver of one test: csi-test's mock driver, serving
// gRPC on a unix socket, whose gomock servers delegate to csitest's
// in-memory driver. Through the embedded csitest.Driver a test gives the
// driver volumes, makes DeleteVolume fail or hold its answer, and reads
// what it has; through expectDeletes it says how many DeleteVolume calls
// each volume gets, which gomock checks on every call and when the test
// ends.
type csiDriver struct {
	*csitest.Driver
	socket     string
	controller *driver.MockControllerServer
}

// serveDriver serves a new driver named driverName until t ends;
// configure, if not nil, sets the in-memory driver's fields first. The
// driver answers the identity calls and ControllerGetCapabilities any number
// of times, DeleteVolume only as expectDeletes allows; any other call fails
// t.
//
// Serve the driver before starting a host that uses it, so that the host
// stops first when t ends.
func serveDriver(t *testing.T, configure func(*csitest.Driver)) *csiDriver {
	t.Helper()
	return serveDriverNamed(t, driverName, configure)
}

// serveDriverNamed is serveDriver for a driver named name.
func serveDriverNamed(t *testing.T, name string, configure func(*csitest.Driver)) *csiDriver {
	t.Helper()
	ctrl := gomock.NewController(t)
	mem := csitest.New(name)
	if configure != nil {
		configure(mem)
	}
	ids, cs := mem.Identity(), mem.Controller()
	identity := driver.NewMockIdentityServer(ctrl)
	identity.EXPECT().GetPluginInfo(gomock.Any(), gomock.Any()).DoAndReturn(ids.GetPluginInfo).AnyTimes()
	identity.EXPECT().GetPluginCapabilities(gomock.Any(), gomock.Any()).DoAndReturn(ids.GetPluginCapabilities).AnyTimes()
	identity.EXPECT().Probe(gomock.Any(), gomock.Any()).DoAndReturn(ids.Probe).AnyTimes()
	controller := driver.NewMockControllerServer(ctrl)
	controller.EXPECT().ControllerGetCapabilities(gomock.Any(), gomock.Any()).DoAndReturn(cs.ControllerGetCapabilities).AnyTimes()

	// A short directory: unix socket paths are limited to about 100 bytes,
	// and t.TempDir embeds the test's name.
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "csi.sock")
	srv := driver.NewMockCSIDriver(&driver.MockCSIDriverServers{
		Identity:   identity,
		Controller: controller,
		// Mocks without expectations: a call fails t rather than
		// dereferencing a nil server.
		Node:             driver.NewMockNodeServer(ctrl),
		SnapshotMetadata: driver.NewMockSnapshotMetadataServer(ctrl),
	})
	if err := srv.StartOnAddress("unix", socket); err != nil {
		t.Fatalf("serve CSI driver %s on %s: %v", name, socket, err)
	}
	t.Cleanup(srv.Stop)
	return &csiDriver{Driver: mem, socket: socket, controller: controller}
}

// expectDeletes lets the driver get one DeleteVolume call for handle whose
// secrets are exactly secrets (none when nil), answered by the in-memory
// driver. Change the count on the returned call before the calls can come.
func (d *csiDriver) expectDeletes(handle string, secrets map[string]string) *gomock.Call {
	return d.controller.EXPECT().
		DeleteVolume(gomock.Any(), deleteRequest{handle: handle, secrets: secrets}).
		DoAndReturn(d.Controller().DeleteVolume)
}

// deleteRequest matches a DeleteVolume request for handle with exactly
// secrets.
type deleteRequest struct {
	handle  string
	secrets map[string]string
}

func (m deleteRequest) Matches(x any) bool {
	req, ok := x.(*csipb.DeleteVolumeRequest)
	return ok && req.GetVolumeId() == m.handle && maps.Equal(req.GetSecrets(), m.secrets)
}

func (m deleteRequest) String() string {
	return fmt.Sprintf("DeleteVolume of %s with secrets %v", m.handle, m.secrets)
}
