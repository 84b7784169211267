package csitest

import (
	"fmt"
	"net"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// Serve serves the driver on a new unix socket at sock until stop is called.
// interceptors run after the built-in ones, which count the call and then
// apply FailDeletes. stop ends the server as a crash would: calls in flight
// are cut off and the socket is removed. It may be called more than once.
// A driver may be served on several sockets, one after another or at once.
func (d *Driver) Serve(sock string, interceptors ...grpc.UnaryServerInterceptor) (stop func(), err error) {
	l, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("serve CSI driver %q: %w", d.Name, err)
	}
	chain := append([]grpc.UnaryServerInterceptor{d.count, d.failDeletes}, interceptors...)
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(chain...))
	csipb.RegisterIdentityServer(srv, identity{d: d})
	if !d.NodeOnly {
		csipb.RegisterControllerServer(srv, controller{d: d})
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
