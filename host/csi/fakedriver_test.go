package csi_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

const fakeName = "fake.csi.kubeplug.dev"

// socketPath returns the path of a socket in a new directory removed when
// the test ends.
func socketPath(t *testing.T) string {
	t.Helper()
	// A short directory: unix socket paths are limited to about 100 bytes,
	// and t.TempDir embeds the test's name.
	dir, err := os.MkdirTemp("", "csi")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	return filepath.Join(dir, "csi.sock")
}

// serve serves d on a new socket until the test ends and returns the
// socket's path.
func serve(t *testing.T, d *csitest.Driver, interceptors ...grpc.UnaryServerInterceptor) string {
	t.Helper()
	sock := socketPath(t)
	serveAt(t, d, sock, interceptors...)
	return sock
}

// serveAt serves d on sock until stop is called or the test ends.
func serveAt(t *testing.T, d *csitest.Driver, sock string, interceptors ...grpc.UnaryServerInterceptor) (stop func()) {
	t.Helper()
	stop, err := d.Serve(sock, interceptors...)
	require.NoError(t, err)
	t.Cleanup(stop)
	return stop
}

// controller returns a raw CSI controller client for the driver at sock, as
// an external provisioner would use.
func controller(t *testing.T, sock string) csipb.ControllerClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, conn.Close()) })
	return csipb.NewControllerClient(conn)
}

// createVolume creates a volume through cc and returns its handle.
func createVolume(t *testing.T, cc csipb.ControllerClient, name string) string {
	t.Helper()
	resp, err := cc.CreateVolume(t.Context(), &csipb.CreateVolumeRequest{
		Name:          name,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 20},
		VolumeCapabilities: []*csipb.VolumeCapability{{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
	})
	require.NoError(t, err)
	return resp.GetVolume().GetVolumeId()
}

// listVolumes returns the handles of the volumes the driver behind cc has.
func listVolumes(t *testing.T, cc csipb.ControllerClient) []string {
	t.Helper()
	resp, err := cc.ListVolumes(t.Context(), &csipb.ListVolumesRequest{})
	require.NoError(t, err)
	var ids []string
	for _, e := range resp.GetEntries() {
		ids = append(ids, e.GetVolume().GetVolumeId())
	}
	slices.Sort(ids)
	return ids
}

var errNoSecret = errors.New("secret not found")

// secretMap returns a SecretGetter over secrets keyed by namespace/name.
func secretMap(secrets map[string]map[string]string) func(ctx context.Context, namespace, name string) (map[string]string, error) {
	return func(_ context.Context, namespace, name string) (map[string]string, error) {
		s, ok := secrets[namespace+"/"+name]
		if !ok {
			return nil, errNoSecret
		}
		return s, nil
	}
}
