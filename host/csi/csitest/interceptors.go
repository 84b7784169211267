package csitest

import (
	"context"
	"path"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// FailWith returns a server interceptor for Serve that fails every call to
// method, such as "DeleteVolume", with code, before the driver sees it: the
// driver does not count the call.
func FailWith(method string, code codes.Code) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if path.Base(info.FullMethod) == method {
			return nil, status.Errorf(code, "injected failure of %s", method)
		}
		return handler(ctx, req)
	}
}

// Hang returns a server interceptor for Serve that answers calls to method,
// such as "DeleteVolume", only when the caller gives up, with the code of
// its context's error. The driver does not see the call.
func Hang(method string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if path.Base(info.FullMethod) == method {
			<-ctx.Done()
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return handler(ctx, req)
	}
}
