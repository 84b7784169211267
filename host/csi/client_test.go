package csi_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/csi"
	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

var _ actions.VolumeDeleter = (*csi.Client)(nil)

// newClient returns a client for one driver named name at sock, closed when
// the test ends.
func newClient(t *testing.T, name, sock string, secrets csi.SecretGetter) *csi.Client {
	t.Helper()
	if secrets == nil {
		secrets = secretMap(nil)
	}
	c, err := csi.New([]config.CSIDriver{{Name: name, Endpoint: sock, Timeout: 10 * time.Second}}, secrets, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

func TestDeleteVolume(t *testing.T) {
	f := csitest.New(fakeName)
	sock := serve(t, f)
	raw := controller(t, sock)
	keep := createVolume(t, raw, "keep")
	gone := createVolume(t, raw, "gone")
	c := newClient(t, fakeName, sock, nil)

	require.NoError(t, c.DeleteVolume(t.Context(), fakeName, gone, nil))
	require.Equal(t, []string{keep}, listVolumes(t, raw), "the deleted volume is gone, the other is left")

	require.NoError(t, c.DeleteVolume(t.Context(), fakeName, gone, nil), "deleting it again succeeds")
	require.NoError(t, c.DeleteVolume(t.Context(), fakeName, keep, nil))
	require.Empty(t, listVolumes(t, raw))

	require.Equal(t, 1, f.Calls("GetPluginInfo"), "the driver is verified once per connection")
	require.Equal(t, 1, f.Calls("ControllerGetCapabilities"))
	require.Equal(t, 3, f.Calls("DeleteVolume"))
}

func TestDeleteVolumeUnknownHandle(t *testing.T) {
	for _, notFound := range []bool{false, true} {
		t.Run(fmt.Sprintf("driver answers NotFound=%t", notFound), func(t *testing.T) {
			f := csitest.New(fakeName)
			f.NotFound = notFound
			c := newClient(t, fakeName, serve(t, f), nil)
			require.NoError(t, c.DeleteVolume(t.Context(), fakeName, "never-created", nil))
			require.Equal(t, 1, f.Calls("DeleteVolume"))
		})
	}
}

func TestDeleteVolumeSecrets(t *testing.T) {
	want := map[string]string{"user": "admin", "password": "s3cret"}
	secrets := secretMap(map[string]map[string]string{
		"storage/provisioner": want,
		"storage/stale":       {"user": "admin", "password": "old"},
	})
	tests := []struct {
		name    string
		ref     *abi.SecretReference
		deleted bool
		code    codes.Code // of the driver's answer
		errIs   error
		errHas  string
	}{
		{name: "the secret's data is passed", ref: &abi.SecretReference{Namespace: "storage", Name: "provisioner"}, deleted: true},
		{name: "the driver refuses other data", ref: &abi.SecretReference{Namespace: "storage", Name: "stale"},
			code: codes.Unauthenticated, errIs: csi.ErrCall, errHas: "provisioner-secret-name"},
		{name: "the driver refuses no secret", code: codes.InvalidArgument, errIs: csi.ErrCall},
		// As external-provisioner does: the call goes ahead without
		// secrets, and this driver, which needs them, refuses it.
		{name: "an unreadable secret is not passed", ref: &abi.SecretReference{Namespace: "storage", Name: "missing"},
			code: codes.InvalidArgument, errIs: csi.ErrCall, errHas: "provisioner-secret-name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := csitest.New(fakeName)
			f.Secrets = want
			sock := serve(t, f)
			raw := controller(t, sock)
			handle := createVolume(t, raw, "v")
			c := newClient(t, fakeName, sock, secrets)

			err := c.DeleteVolume(t.Context(), fakeName, handle, tt.ref)
			if tt.deleted {
				require.NoError(t, err)
				require.Equal(t, want, f.LastSecrets())
				require.Empty(t, listVolumes(t, raw))
				return
			}
			require.ErrorIs(t, err, tt.errIs)
			require.ErrorContains(t, err, tt.errHas)
			require.ErrorContains(t, err, handle)
			require.Equal(t, []string{handle}, listVolumes(t, raw), "the volume is left")
			require.Equal(t, tt.code, status.Code(err))
		})
	}
}

func TestDeleteVolumeRefused(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nothing.sock")
	tests := []struct {
		name   string
		driver func(*csitest.Driver)
		sock   string // instead of the fake's
		call   string // driver name in the call, if not the configured one
		errIs  error
		code   codes.Code // gRPC code the error carries, if any
		errHas []string
		// probed: Probe passes (the driver is fine until DeleteVolume).
		probed bool
	}{
		{
			name:   "socket serves another driver",
			driver: func(f *csitest.Driver) { f.Name = "other.csi.example.com" },
			errIs:  csi.ErrWrongDriver,
			errHas: []string{`serves driver "other.csi.example.com", not "` + fakeName + `"`},
		},
		{
			name: "driver cannot delete volumes",
			driver: func(f *csitest.Driver) {
				f.Caps = []csipb.ControllerServiceCapability_RPC_Type{csipb.ControllerServiceCapability_RPC_LIST_VOLUMES}
			},
			errIs:  csi.ErrCannotDelete,
			errHas: []string{"CREATE_DELETE_VOLUME"},
		},
		{
			name:   "driver not configured",
			call:   "other.csi.example.com",
			errIs:  csi.ErrDriverNotConfigured,
			errHas: []string{`"other.csi.example.com"`, "csiDrivers:"},
		},
		{
			name:   "nothing listens on the socket",
			sock:   missing,
			errIs:  csi.ErrCall,
			code:   codes.Unavailable,
			errHas: []string{"GetPluginInfo", missing, "check that the driver's controller is running"},
		},
		{
			name:   "socket without the controller service",
			driver: func(f *csitest.Driver) { f.NodeOnly = true },
			errIs:  csi.ErrCall,
			code:   codes.Unimplemented,
			errHas: []string{"ControllerGetCapabilities", "not its node socket"},
		},
		{
			name:   "driver fails DeleteVolume",
			errIs:  csi.ErrCall,
			code:   codes.Internal,
			errHas: []string{"DeleteVolume", "injected failure", "logs"},
			probed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := csitest.New(fakeName)
			if tt.driver != nil {
				tt.driver(f)
			}
			sock := tt.sock
			if sock == "" {
				sock = serve(t, f, csitest.FailWith("DeleteVolume", codes.Internal))
			}
			call := fakeName
			if tt.call != "" {
				call = tt.call
			}
			c := newClient(t, fakeName, sock, nil)

			// Probe finds at once what the first DeleteVolume would.
			perr := c.Probe(t.Context(), call)
			if tt.probed {
				require.NoError(t, perr)
			} else {
				require.ErrorIs(t, perr, tt.errIs)
				require.ErrorContains(t, perr, `"`+call+`"`)
				for _, s := range tt.errHas {
					require.ErrorContains(t, perr, s)
				}
			}

			err := c.DeleteVolume(t.Context(), call, "vol-7", nil)
			t.Log(err)
			require.ErrorIs(t, err, tt.errIs)
			require.ErrorContains(t, err, `delete volume "vol-7"`)
			require.ErrorContains(t, err, `"`+call+`"`)
			for _, s := range tt.errHas {
				require.ErrorContains(t, err, s)
			}
			if tt.code != codes.OK {
				require.Equal(t, tt.code, status.Code(err))
				require.ErrorContains(t, err, "code = "+tt.code.String())
			}
		})
	}
}

func TestDeleteVolumeTimeout(t *testing.T) {
	f := csitest.New(fakeName)
	sock := serve(t, f, csitest.Hang("DeleteVolume"))
	c, err := csi.New([]config.CSIDriver{{Name: fakeName, Endpoint: sock, Timeout: 50 * time.Millisecond}}, secretMap(nil), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })

	err = c.DeleteVolume(t.Context(), fakeName, "vol-1", nil)
	t.Log(err)
	require.ErrorIs(t, err, csi.ErrCall)
	require.Equal(t, codes.DeadlineExceeded, status.Code(err))
	require.ErrorContains(t, err, "did not answer within 50ms")
}

// TestDeleteVolumeDriverReplaced: after the driver was unreachable, the
// client verifies whatever answers on the socket next.
func TestDeleteVolumeDriverReplaced(t *testing.T) {
	sock := socketPath(t)
	stop := serveAt(t, csitest.New(fakeName), sock)
	c := newClient(t, fakeName, sock, nil)
	require.NoError(t, c.DeleteVolume(t.Context(), fakeName, "vol-1", nil))

	stop()
	err := c.DeleteVolume(t.Context(), fakeName, "vol-2", nil)
	require.Equal(t, codes.Unavailable, status.Code(err))

	other := csitest.New("other.csi.example.com")
	serveAt(t, other, sock)
	err = c.DeleteVolume(t.Context(), fakeName, "vol-3", nil)
	require.ErrorIs(t, err, csi.ErrWrongDriver)
	require.Zero(t, other.Calls("DeleteVolume"))
}

// TestProbe: Probe asks the driver each time, so a driver that went away
// since it passed is found, and one that comes back passes again; a
// DeleteVolume after a probe that passed asks nothing more.
func TestProbe(t *testing.T) {
	sock := socketPath(t)
	c := newClient(t, fakeName, sock, nil)
	err := c.Probe(t.Context(), fakeName)
	require.Equal(t, codes.Unavailable, status.Code(err), "nothing listens yet: %v", err)

	f := csitest.New(fakeName)
	stop := serveAt(t, f, sock)
	require.NoError(t, c.Probe(t.Context(), fakeName))
	require.NoError(t, c.Probe(t.Context(), fakeName))
	require.Equal(t, 2, f.Calls("GetPluginInfo"), "each probe asks")
	require.NoError(t, c.DeleteVolume(t.Context(), fakeName, "vol-1", nil))
	require.Equal(t, 2, f.Calls("GetPluginInfo"), "a DeleteVolume after a probe that passed asks nothing more")

	stop()
	err = c.Probe(t.Context(), fakeName)
	require.Equal(t, codes.Unavailable, status.Code(err), "gone since it passed: %v", err)
	serveAt(t, csitest.New(fakeName), sock)
	require.NoError(t, c.Probe(t.Context(), fakeName), "back")
}

func TestDeleteVolumeConcurrent(t *testing.T) {
	f := csitest.New(fakeName)
	sock := serve(t, f)
	raw := controller(t, sock)
	handles := make([]string, 8)
	for i := range handles {
		handles[i] = createVolume(t, raw, fmt.Sprint(i))
	}
	c := newClient(t, fakeName, sock, nil)

	errs := make([]error, len(handles))
	var wg sync.WaitGroup
	for i, h := range handles {
		wg.Go(func() { errs[i] = c.DeleteVolume(t.Context(), fakeName, h, nil) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Empty(t, listVolumes(t, raw))
}

func TestClose(t *testing.T) {
	f := csitest.New(fakeName)
	sock := serve(t, f)
	c, err := csi.New([]config.CSIDriver{{Name: fakeName, Endpoint: sock}}, secretMap(nil), nil)
	require.NoError(t, err)
	require.NoError(t, c.DeleteVolume(t.Context(), fakeName, "vol-1", nil))
	require.NoError(t, c.Close())
	require.ErrorIs(t, c.DeleteVolume(t.Context(), fakeName, "vol-2", nil), csi.ErrClosed)
	require.Equal(t, 1, f.Calls("DeleteVolume"))
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		drivers []config.CSIDriver
		errHas  string // empty: accepted
	}{
		{name: "none"},
		{name: "several", drivers: []config.CSIDriver{
			{Name: "b.csi.example.com", Endpoint: "/run/b.sock"},
			{Name: "a.csi.example.com", Endpoint: "/run/a.sock", Timeout: time.Second},
		}},
		{name: "no name", drivers: []config.CSIDriver{{Endpoint: "/run/a.sock"}}, errHas: "driver 0 has no name"},
		{name: "duplicate", drivers: []config.CSIDriver{
			{Name: "a.csi.example.com", Endpoint: "/run/a.sock"},
			{Name: "a.csi.example.com", Endpoint: "/run/b.sock"},
		}, errHas: "listed twice"},
		{name: "relative endpoint", drivers: []config.CSIDriver{{Name: "a.csi.example.com", Endpoint: "run/a.sock"}}, errHas: "not an absolute socket path"},
		{name: "URL endpoint", drivers: []config.CSIDriver{{Name: "a.csi.example.com", Endpoint: "unix:///run/a.sock"}}, errHas: "not an absolute socket path"},
		{name: "negative timeout", drivers: []config.CSIDriver{{Name: "a.csi.example.com", Endpoint: "/run/a.sock", Timeout: -time.Second}}, errHas: "negative timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := csi.New(tt.drivers, secretMap(nil), nil)
			if tt.errHas != "" {
				require.ErrorIs(t, err, csi.ErrInvalidDriver)
				require.ErrorContains(t, err, tt.errHas)
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, c.Close()) })
			var want []string
			for _, d := range tt.drivers {
				want = append(want, d.Name)
				require.True(t, c.Configured(d.Name))
			}
			require.IsNonDecreasing(t, c.Drivers())
			require.ElementsMatch(t, want, c.Drivers())
			require.False(t, c.Configured("other.csi.example.com"))
		})
	}
	_, err := csi.New(nil, nil, nil)
	require.ErrorContains(t, err, "nil SecretGetter")
}

// TestDeleteVolumeDriverReplacedBetweenCalls: gRPC reconnects by itself, so
// a driver replaced behind the socket while no call was made is reached by
// the next call without an error: the client verifies the connection again
// before a DeleteVolume once it has not stayed ready, and never sends the
// other driver a deletion.
func TestDeleteVolumeDriverReplacedBetweenCalls(t *testing.T) {
	sock := socketPath(t)
	stop := serveAt(t, csitest.New(fakeName), sock)
	c := newClient(t, fakeName, sock, nil)
	require.NoError(t, c.DeleteVolume(t.Context(), fakeName, "vol-1", nil))

	stop()
	// gRPC notices the server gone on its own, between calls.
	require.Eventually(t, func() bool { return csi.ConnState(c, fakeName) != connectivity.Ready }, 10*time.Second, time.Millisecond)
	other := csitest.New("other.csi.example.com")
	serveAt(t, other, sock)
	err := c.DeleteVolume(t.Context(), fakeName, "vol-2", nil)
	require.ErrorIs(t, err, csi.ErrWrongDriver)
	require.Zero(t, other.Calls("DeleteVolume"), "the other driver was asked to delete a volume")
}

// TestProbeFailureUnverifies: a probe that finds another driver behind the
// connection leaves it unverified, so that no DeleteVolume goes to it.
func TestProbeFailureUnverifies(t *testing.T) {
	f := csitest.New(fakeName)
	sock := serve(t, f)
	c := newClient(t, fakeName, sock, nil)
	require.NoError(t, c.Probe(t.Context(), fakeName))
	f.SetName("other.csi.example.com")
	require.ErrorIs(t, c.Probe(t.Context(), fakeName), csi.ErrWrongDriver)
	require.ErrorIs(t, c.DeleteVolume(t.Context(), fakeName, "vol-1", nil), csi.ErrWrongDriver)
	require.Zero(t, f.Calls("DeleteVolume"))
}
