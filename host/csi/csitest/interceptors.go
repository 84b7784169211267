package csitest

import (
	"context"
	"path"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// FailWith returns a server interceptor that fails every call to method,
// such as "DeleteVolume", with code, before the driver sees it.
func FailWith(method string, code codes.Code) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if path.Base(info.FullMethod) == method {
			return nil, status.Errorf(code, "injected failure of %s", method)
		}
		return handler(ctx, req)
	}
}

// Hang returns a server interceptor that answers calls to method, such as
// "DeleteVolume", only when the caller gives up, with the code of its
// context's error.
func Hang(method string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if path.Base(info.FullMethod) == method {
			<-ctx.Done()
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return handler(ctx, req)
	}
}

// volumeRequest is a request naming a volume, such as DeleteVolume's.
type volumeRequest interface {
	GetVolumeId() string
}

// count is the first interceptor: it counts every call, by method and by the
// volume it names, before anything can fail it.
func (d *Driver) count(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	method := path.Base(info.FullMethod)
	d.mu.Lock()
	if d.calls == nil {
		d.calls = map[string]int{}
		d.volumeCalls = map[methodVolume]int{}
	}
	d.calls[method]++
	if r, ok := req.(volumeRequest); ok {
		d.volumeCalls[methodVolume{method, r.GetVolumeId()}]++
	}
	d.mu.Unlock()
	return handler(ctx, req)
}

// failDeletes is the second interceptor: it fails DeleteVolume as
// FailDeletes asked.
func (d *Driver) failDeletes(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if path.Base(info.FullMethod) == "DeleteVolume" {
		d.mu.Lock()
		code, msg := d.failCode, d.failMsg
		d.mu.Unlock()
		if code != codes.OK {
			return nil, status.Error(code, msg)
		}
	}
	return handler(ctx, req)
}
