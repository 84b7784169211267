package csitest

import (
	"fmt"
	"net"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// Serve serves the driver on a new unix socket at sock until stop is called.
// interceptors run before the driver sees a call, in order. stop ends the
// server as a crash would: calls in flight are cut off and the socket is
// removed. It may be called more than once. A driver may be served on
// several sockets, one after another or at once.
func (d *Driver) Serve(sock string, interceptors ...grpc.UnaryServerInterceptor) (stop func(), err error) {
	l, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("serve CSI driver %q: %w", d.Name, err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors...))
	csipb.RegisterIdentityServer(srv, d.Identity())
	if !d.NodeOnly {
		csipb.RegisterControllerServer(srv, d.Controller())
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		// Serve fails only when Accept does, before stop; the socket then
		// stops answering, which the callers see as Unavailable.
		_ = srv.Serve(l)
	}()
	return sync.OnceFunc(func() {
		srv.Stop()
		<-served
	}), nil
}

// Identity returns the driver's CSI Identity service, for a gRPC server
// other than Serve's, such as one of csi-test's driver package whose mock
// delegates to it. Its calls are counted as Serve's are.
func (d *Driver) Identity() csipb.IdentityServer {
	return identity{d: d}
}

// Controller returns the driver's CSI Controller service, for a gRPC server
// other than Serve's, as Identity does. Its calls are counted, and
// FailDeletes and HoldDeletes apply to them, as to Serve's; NodeOnly does
// not, as it only keeps Serve from serving this service.
func (d *Driver) Controller() csipb.ControllerServer {
	return controller{d: d}
}
