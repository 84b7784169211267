package csitest

import (
	"context"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// identity is the driver's CSI Identity service.
type identity struct {
	csipb.UnimplementedIdentityServer
	d *Driver
}

func (s identity) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	s.d.received("GetPluginInfo", "")
	return &csipb.GetPluginInfoResponse{Name: s.d.name(), VendorVersion: "csitest"}, nil
}

func (s identity) GetPluginCapabilities(context.Context, *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	s.d.received("GetPluginCapabilities", "")
	resp := &csipb.GetPluginCapabilitiesResponse{}
	if !s.d.NodeOnly {
		resp.Capabilities = append(resp.Capabilities, &csipb.PluginCapability{
			Type: &csipb.PluginCapability_Service_{Service: &csipb.PluginCapability_Service{Type: csipb.PluginCapability_Service_CONTROLLER_SERVICE}},
		})
	}
	return resp, nil
}

func (s identity) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	s.d.received("Probe", "")
	return &csipb.ProbeResponse{}, nil
}
