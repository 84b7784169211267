package csitest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

// serve serves d on a new socket until the test ends and returns a
// controller client for it.
func serve(t *testing.T, d *csitest.Driver, interceptors ...grpc.UnaryServerInterceptor) csipb.ControllerClient {
	t.Helper()
	// A short directory: unix socket paths are limited to about 100 bytes,
	// and t.TempDir embeds the test's name.
	dir, err := os.MkdirTemp("", "csitest")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	stop, err := d.Serve(filepath.Join(dir, "csi.sock"), interceptors...)
	require.NoError(t, err)
	t.Cleanup(stop)
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "csi.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, conn.Close()) })
	return csipb.NewControllerClient(conn)
}

func deleteVolume(ctx context.Context, cc csipb.ControllerClient, id string) error {
	_, err := cc.DeleteVolume(ctx, &csipb.DeleteVolumeRequest{VolumeId: id})
	return err
}

func TestAddVolume(t *testing.T) {
	d := csitest.New("a.csi.example.com")
	cc := serve(t, d)
	require.Empty(t, d.Volumes())

	b := d.AddVolume("b")
	a := d.AddVolume("a")
	require.NotEqual(t, a, b)
	require.Equal(t, a, d.AddVolume("a"), "a name is one volume")
	require.ElementsMatch(t, []string{a, b}, d.Volumes())
	require.IsIncreasing(t, d.Volumes(), "sorted ids")

	resp, err := cc.ListVolumes(t.Context(), &csipb.ListVolumesRequest{})
	require.NoError(t, err)
	var listed []string
	for _, e := range resp.GetEntries() {
		listed = append(listed, e.GetVolume().GetVolumeId())
	}
	require.ElementsMatch(t, d.Volumes(), listed, "ListVolumes sees them")

	created, err := cc.CreateVolume(t.Context(), &csipb.CreateVolumeRequest{Name: "a"})
	require.NoError(t, err)
	require.Equal(t, a, created.GetVolume().GetVolumeId(), "CreateVolume is idempotent")

	require.NoError(t, deleteVolume(t.Context(), cc, a))
	require.Equal(t, []string{b}, d.Volumes())
	require.NotEqual(t, a, d.AddVolume("a"), "a new volume once the old one is gone")
}

func TestCreateVolume(t *testing.T) {
	d := csitest.New("a.csi.example.com")
	cc := serve(t, d)
	create := func(name string, bytes int64) (string, error) {
		resp, err := cc.CreateVolume(t.Context(), &csipb.CreateVolumeRequest{Name: name, CapacityRange: &csipb.CapacityRange{RequiredBytes: bytes}})
		return resp.GetVolume().GetVolumeId(), err
	}
	id, err := create("v", 1<<20)
	require.NoError(t, err)
	again, err := create("v", 1<<20)
	require.NoError(t, err)
	require.Equal(t, id, again)
	_, err = create("v", 2<<20)
	require.Equal(t, codes.AlreadyExists, status.Code(err))
	_, err = create("", 0)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, []string{id}, d.Volumes())
}

func TestFailDeletes(t *testing.T) {
	d := csitest.New("a.csi.example.com")
	cc := serve(t, d)
	id := d.AddVolume("v")

	d.FailDeletes(codes.Unavailable, "backend down")
	err := deleteVolume(t.Context(), cc, id)
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.ErrorContains(t, err, "backend down")
	err = deleteVolume(t.Context(), cc, id)
	require.Equal(t, codes.Unavailable, status.Code(err), "every delete fails")
	require.Equal(t, []string{id}, d.Volumes(), "nothing is deleted")
	require.Equal(t, 2, d.CallsFor("DeleteVolume", id), "failed calls count")

	d.HealDeletes()
	require.NoError(t, deleteVolume(t.Context(), cc, id))
	require.Empty(t, d.Volumes())
	require.Equal(t, 3, d.Calls("DeleteVolume"))
}

func TestHoldDeletes(t *testing.T) {
	d := csitest.New("a.csi.example.com")
	cc := serve(t, d)
	held, later := d.AddVolume("held"), d.AddVolume("later")
	deleted, release := d.HoldDeletes()
	t.Cleanup(release)

	answer := make(chan error, 1)
	go func() { answer <- deleteVolume(context.Background(), cc, held) }()
	require.Equal(t, held, <-deleted)
	require.Equal(t, []string{later}, d.Volumes(), "the volume is deleted before the hold")
	select {
	case err := <-answer:
		t.Fatalf("DeleteVolume answered %v before the release", err)
	default:
	}

	release()
	require.NoError(t, <-answer)
	require.NoError(t, deleteVolume(t.Context(), cc, later), "later calls answer at once")
	require.Empty(t, d.Volumes())
	select {
	case id := <-deleted:
		t.Fatalf("deletion of %s reported after the release", id)
	default:
	}
	release() // again: no effect
}

// TestHoldDeletesCallerGone: a caller that gives up while held gets no
// answer, but its volume is deleted, as when the caller is killed.
func TestHoldDeletesCallerGone(t *testing.T) {
	d := csitest.New("a.csi.example.com")
	cc := serve(t, d)
	id := d.AddVolume("v")
	deleted, release := d.HoldDeletes()
	t.Cleanup(release)

	ctx, cancel := context.WithCancel(t.Context())
	answer := make(chan error, 1)
	go func() { answer <- deleteVolume(ctx, cc, id) }()
	require.Equal(t, id, <-deleted)
	cancel()
	require.Equal(t, codes.Canceled, status.Code(<-answer))
	require.Empty(t, d.Volumes())
	require.Equal(t, 1, d.CallsFor("DeleteVolume", id))
}

func TestCallsFor(t *testing.T) {
	d := csitest.New("a.csi.example.com")
	cc := serve(t, d)
	d.FailDeletes(codes.Internal, "backend down")
	for _, id := range []string{"a", "b", "a"} {
		require.Equal(t, codes.Internal, status.Code(deleteVolume(t.Context(), cc, id)))
	}
	_, err := cc.ListVolumes(t.Context(), &csipb.ListVolumesRequest{})
	require.NoError(t, err)
	_, err = cc.ControllerPublishVolume(t.Context(), &csipb.ControllerPublishVolumeRequest{VolumeId: "a"})
	require.Equal(t, codes.Unimplemented, status.Code(err))

	tests := []struct {
		method, id string
		want       int
	}{
		{"DeleteVolume", "a", 2},
		{"DeleteVolume", "b", 1},
		{"DeleteVolume", "c", 0},
		{"ControllerPublishVolume", "a", 0},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.id, func(t *testing.T) {
			require.Equal(t, tt.want, d.CallsFor(tt.method, tt.id))
		})
	}
	require.Equal(t, 3, d.Calls("DeleteVolume"), "calls FailDeletes fails count")
	require.Equal(t, 1, d.Calls("ListVolumes"))
	require.Zero(t, d.Calls("ControllerPublishVolume"), "calls of methods the driver does not implement do not count")
}

// TestInterceptorsBeforeDriver: a call an interceptor answers never reaches
// the driver.
func TestInterceptorsBeforeDriver(t *testing.T) {
	d := csitest.New("a.csi.example.com")
	cc := serve(t, d, csitest.FailWith("DeleteVolume", codes.Internal))
	id := d.AddVolume("v")
	require.Equal(t, codes.Internal, status.Code(deleteVolume(t.Context(), cc, id)))
	require.Equal(t, []string{id}, d.Volumes())
	require.Zero(t, d.Calls("DeleteVolume"))
}

// TestServicesOutsideServe: the services Identity and Controller return, as
// another gRPC server (csi-test's driver package) serves them, share the
// driver's volumes, counts, failures and holds.
func TestServicesOutsideServe(t *testing.T) {
	d := csitest.New("a.csi.example.com")
	d.NodeOnly = true // applies to Serve only
	ids, cs := d.Identity(), d.Controller()
	info, err := ids.GetPluginInfo(t.Context(), &csipb.GetPluginInfoRequest{})
	require.NoError(t, err)
	require.Equal(t, "a.csi.example.com", info.GetName())

	id := d.AddVolume("v")
	d.FailDeletes(codes.Unavailable, "backend down")
	_, err = cs.DeleteVolume(t.Context(), &csipb.DeleteVolumeRequest{VolumeId: id})
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.Equal(t, []string{id}, d.Volumes())
	d.HealDeletes()

	deleted, release := d.HoldDeletes()
	t.Cleanup(release)
	answer := make(chan error, 1)
	go func() {
		_, err := cs.DeleteVolume(context.Background(), &csipb.DeleteVolumeRequest{VolumeId: id})
		answer <- err
	}()
	require.Equal(t, id, <-deleted)
	release()
	require.NoError(t, <-answer)
	require.Empty(t, d.Volumes())
	require.Equal(t, 2, d.CallsFor("DeleteVolume", id))
	require.Equal(t, 1, d.Calls("GetPluginInfo"))
}

func TestDeleteVolume(t *testing.T) {
	want := map[string]string{"user": "admin"}
	tests := []struct {
		name    string
		driver  func(*csitest.Driver)
		id      string
		secrets map[string]string
		code    codes.Code
	}{
		{name: "known volume", id: "known"},
		{name: "unknown volume", id: "unknown"},
		{name: "unknown volume, NotFound", driver: func(d *csitest.Driver) { d.NotFound = true }, id: "unknown", code: codes.NotFound},
		{name: "no id", code: codes.InvalidArgument},
		{name: "secrets", driver: func(d *csitest.Driver) { d.Secrets = want }, id: "known", secrets: want},
		{name: "no secrets", driver: func(d *csitest.Driver) { d.Secrets = want }, id: "known", code: codes.InvalidArgument},
		{name: "wrong secrets", driver: func(d *csitest.Driver) { d.Secrets = want }, id: "known", secrets: map[string]string{"user": "x"}, code: codes.Unauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := csitest.New("a.csi.example.com")
			if tt.driver != nil {
				tt.driver(d)
			}
			cc := serve(t, d)
			known := d.AddVolume("known")
			id := tt.id
			if id == "known" {
				id = known
			}
			_, err := cc.DeleteVolume(t.Context(), &csipb.DeleteVolumeRequest{VolumeId: id, Secrets: tt.secrets})
			require.Equal(t, tt.code, status.Code(err))
			if tt.code == codes.OK && id == known {
				require.Empty(t, d.Volumes())
			} else {
				require.Equal(t, []string{known}, d.Volumes())
			}
			if id != "" {
				require.Equal(t, tt.secrets, d.LastSecrets())
			}
		})
	}
}

func TestServeNodeOnly(t *testing.T) {
	d := csitest.New("a.csi.example.com")
	d.NodeOnly = true
	cc := serve(t, d)
	_, err := cc.ControllerGetCapabilities(t.Context(), &csipb.ControllerGetCapabilitiesRequest{})
	require.Equal(t, codes.Unimplemented, status.Code(err))
}

func TestServeRefused(t *testing.T) {
	_, err := csitest.New("a.csi.example.com").Serve(filepath.Join(t.TempDir(), "missing", "csi.sock"))
	require.ErrorContains(t, err, `serve CSI driver "a.csi.example.com"`)
}

// TestServeAgain: stop removes the socket, so that a driver can come back
// on the same path, as a restarted plugin does.
func TestServeAgain(t *testing.T) {
	dir, err := os.MkdirTemp("", "csitest")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	sock := filepath.Join(dir, "csi.sock")
	d := csitest.New("a.csi.example.com")
	stop, err := d.Serve(sock)
	require.NoError(t, err)
	stop()
	stop()
	_, err = os.Stat(sock)
	require.ErrorIs(t, err, os.ErrNotExist)
	stop, err = d.Serve(sock)
	require.NoError(t, err)
	stop()
}
