package csitest

import (
	"context"
	"maps"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// controller is the driver's CSI Controller service.
type controller struct {
	csipb.UnimplementedControllerServer
	d *Driver
}

func (s controller) ControllerGetCapabilities(context.Context, *csipb.ControllerGetCapabilitiesRequest) (*csipb.ControllerGetCapabilitiesResponse, error) {
	s.d.received("ControllerGetCapabilities", "")
	caps := s.d.Caps
	if caps == nil {
		caps = []csipb.ControllerServiceCapability_RPC_Type{csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}
	}
	resp := &csipb.ControllerGetCapabilitiesResponse{}
	for _, c := range caps {
		resp.Capabilities = append(resp.Capabilities, &csipb.ControllerServiceCapability{
			Type: &csipb.ControllerServiceCapability_Rpc{Rpc: &csipb.ControllerServiceCapability_RPC{Type: c}},
		})
	}
	return resp, nil
}

// CreateVolume is idempotent, as the CSI specification asks: a volume of
// the same name and capacity is answered again.
func (s controller) CreateVolume(_ context.Context, req *csipb.CreateVolumeRequest) (*csipb.CreateVolumeResponse, error) {
	s.d.received("CreateVolume", "")
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	capacity := req.GetCapacityRange().GetRequiredBytes()
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	id, v, ok := s.d.volumeNamed(req.GetName())
	switch {
	case !ok:
		id = s.d.add(req.GetName(), capacity)
	case v.capacity != capacity:
		return nil, status.Errorf(codes.AlreadyExists, "volume %q exists as %s with %d bytes", req.GetName(), id, v.capacity)
	}
	return &csipb.CreateVolumeResponse{Volume: &csipb.Volume{VolumeId: id, CapacityBytes: capacity}}, nil
}

func (s controller) DeleteVolume(ctx context.Context, req *csipb.DeleteVolumeRequest) (*csipb.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	s.d.received("DeleteVolume", id)
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	h, err := s.d.remove(id, req.GetSecrets())
	if err != nil {
		return nil, err
	}
	if h != nil {
		h.wait(ctx, id)
	}
	return &csipb.DeleteVolumeResponse{}, nil
}

// remove deletes the volume id as DeleteVolume with secrets does, and
// returns the HoldDeletes its answer must wait for, if any.
func (d *Driver) remove(id string, secrets map[string]string) (*hold, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failCode != codes.OK {
		return nil, status.Error(d.failCode, d.failMsg)
	}
	d.lastSecrets = maps.Clone(secrets)
	if d.Secrets != nil {
		switch {
		case len(secrets) == 0:
			return nil, status.Error(codes.InvalidArgument, "secrets are required")
		case !maps.Equal(secrets, d.Secrets):
			return nil, status.Error(codes.Unauthenticated, "wrong secrets")
		}
	}
	if _, ok := d.volumes[id]; !ok && d.NotFound {
		return nil, status.Errorf(codes.NotFound, "volume %s not found", id)
	}
	delete(d.volumes, id)
	return d.hold, nil
}

func (s controller) ListVolumes(context.Context, *csipb.ListVolumesRequest) (*csipb.ListVolumesResponse, error) {
	s.d.received("ListVolumes", "")
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	resp := &csipb.ListVolumesResponse{}
	for _, id := range slices.Sorted(maps.Keys(s.d.volumes)) {
		resp.Entries = append(resp.Entries, &csipb.ListVolumesResponse_Entry{
			Volume: &csipb.Volume{VolumeId: id, CapacityBytes: s.d.volumes[id].capacity},
		})
	}
	return resp, nil
}
