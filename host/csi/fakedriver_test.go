package csi_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// fakeDriver is a minimal CSI plugin served over gRPC on a unix socket: the
// Identity service and the Controller calls a deleter and its tests use, over
// volumes kept in memory. csi-test's stateful mock driver left csi-test in
// v4.3, so the tests carry their own.
type fakeDriver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer

	name string
	// caps are the controller capabilities advertised; nil means
	// CREATE_DELETE_VOLUME only.
	caps []csi.ControllerServiceCapability_RPC_Type
	// secrets, when not nil, are the secrets DeleteVolume requires, as a
	// driver with a provisioner secret does.
	secrets map[string]string
	// notFound makes DeleteVolume of an unknown volume answer NotFound, as
	// some drivers do, instead of OK as the specification asks.
	notFound bool

	mu          sync.Mutex
	volumes     map[string]bool
	next        int
	calls       map[string]int      // method name -> calls received
	lastSecrets map[string]string // of the last DeleteVolume request
}

const fakeName = "fake.csi.kubeplug.dev"

func newFakeDriver() *fakeDriver {
	return &fakeDriver{name: fakeName}
}

// serve serves f on a new socket until the test ends and returns the
// socket's path. interceptors run after the one counting calls.
func (f *fakeDriver) serve(t *testing.T, interceptors ...grpc.UnaryServerInterceptor) string {
	t.Helper()
	// A short directory: unix socket paths are limited to about 100 bytes,
	// and t.TempDir embeds the test's name.
	dir, err := os.MkdirTemp("", "csi")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	sock := filepath.Join(dir, "csi.sock")
	f.serveAt(t, sock, interceptors...)
	return sock
}

// serveAt serves f on sock until stop is called or the test ends.
func (f *fakeDriver) serveAt(t *testing.T, sock string, interceptors ...grpc.UnaryServerInterceptor) (stop func()) {
	t.Helper()
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(append([]grpc.UnaryServerInterceptor{f.count}, interceptors...)...))
	csi.RegisterIdentityServer(srv, f)
	csi.RegisterControllerServer(srv, f)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			srv.Stop()
			require.NoError(t, <-served)
		})
	}
	t.Cleanup(stop)
	return stop
}

func (f *fakeDriver) count(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[filepath.Base(info.FullMethod)]++
	f.mu.Unlock()
	return handler(ctx, req)
}

// callsTo returns how many method calls f received.
func (f *fakeDriver) callsTo(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *fakeDriver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: f.name, VendorVersion: "test"}, nil
}

func (f *fakeDriver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

func (f *fakeDriver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

func (f *fakeDriver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	caps := f.caps
	if caps == nil {
		caps = []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}
	}
	resp := &csi.ControllerGetCapabilitiesResponse{}
	for _, c := range caps {
		resp.Capabilities = append(resp.Capabilities, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: c}},
		})
	}
	return resp, nil
}

func (f *fakeDriver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.volumes == nil {
		f.volumes = map[string]bool{}
	}
	f.next++
	id := fmt.Sprintf("vol-%d-%s", f.next, req.GetName())
	f.volumes[id] = true
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: id, CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}}, nil
}

func (f *fakeDriver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastSecrets = req.GetSecrets()
	if f.secrets != nil {
		switch {
		case len(req.GetSecrets()) == 0:
			return nil, status.Error(codes.InvalidArgument, "secrets are required")
		case !maps.Equal(req.GetSecrets(), f.secrets):
			return nil, status.Error(codes.Unauthenticated, "wrong secrets")
		}
	}
	if !f.volumes[req.GetVolumeId()] && f.notFound {
		return nil, status.Errorf(codes.NotFound, "volume %s not found", req.GetVolumeId())
	}
	delete(f.volumes, req.GetVolumeId())
	return &csi.DeleteVolumeResponse{}, nil
}

func (f *fakeDriver) ListVolumes(context.Context, *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &csi.ListVolumesResponse{}
	for id := range f.volumes {
		resp.Entries = append(resp.Entries, &csi.ListVolumesResponse_Entry{Volume: &csi.Volume{VolumeId: id}})
	}
	return resp, nil
}

// controller returns a raw CSI controller client for the driver at sock, as
// an external provisioner would use.
func controller(t *testing.T, sock string) csi.ControllerClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, conn.Close()) })
	return csi.NewControllerClient(conn)
}

// createVolume creates a volume through cc and returns its handle.
func createVolume(t *testing.T, cc csi.ControllerClient, name string) string {
	t.Helper()
	resp, err := cc.CreateVolume(t.Context(), &csi.CreateVolumeRequest{
		Name:          name,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20},
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
	})
	require.NoError(t, err)
	return resp.GetVolume().GetVolumeId()
}

// listVolumes returns the handles of the volumes the driver behind cc has.
func listVolumes(t *testing.T, cc csi.ControllerClient) []string {
	t.Helper()
	resp, err := cc.ListVolumes(t.Context(), &csi.ListVolumesRequest{})
	require.NoError(t, err)
	var ids []string
	for _, e := range resp.GetEntries() {
		ids = append(ids, e.GetVolume().GetVolumeId())
	}
	slices.Sort(ids)
	return ids
}

// failWith is a server interceptor failing every call to method with code.
func failWith(method string, code codes.Code) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if filepath.Base(info.FullMethod) == method {
			return nil, status.Errorf(code, "injected failure of %s", method)
		}
		return handler(ctx, req)
	}
}

// hang is a server interceptor that answers calls to method only when the
// caller gives up.
func hang(method string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if filepath.Base(info.FullMethod) == method {
			<-ctx.Done()
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return handler(ctx, req)
	}
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
