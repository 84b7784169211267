package faults

import (
	"context"
	"path"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// csiMode is how the driver answers the host's DeleteVolume calls.
type csiMode int

const (
	csiOK   csiMode = iota
	csiFail         // Unavailable at once, nothing deleted: the backend is down
	csiHang         // no answer until the caller gives up, nothing deleted
	csiSlow         // the answer comes late; the volume is deleted even if the caller gave up
)

// csiFaults is the fault knob of the real gRPC CSI server (csitest.Driver
// served on a unix socket) the host calls: a unary interceptor in front of
// the driver. Before a DeleteVolume reaches the driver it also asks check,
// which looks at the cluster as it is at that moment (deleted while bound,
// deleted twice).
type csiFaults struct {
	mu    sync.Mutex
	mode  csiMode
	delay time.Duration // of csiSlow
	check func(volumeID string)
}

func (f *csiFaults) set(m csiMode, delay time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode, f.delay = m, delay
}

func (f *csiFaults) interceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if path.Base(info.FullMethod) != "DeleteVolume" {
			return handler(ctx, req)
		}
		// Checked on arrival: the host decided when it sent the call, and
		// a slow call may complete after the host has moved on.
		if id, ok := req.(interface{ GetVolumeId() string }); ok && f.check != nil {
			f.check(id.GetVolumeId())
		}
		f.mu.Lock()
		mode, delay := f.mode, f.delay
		f.mu.Unlock()
		switch mode {
		case csiFail:
			return nil, status.Error(codes.Unavailable, "injected: the storage backend is unavailable")
		case csiHang:
			<-ctx.Done()
			return nil, status.FromContextError(ctx.Err()).Err()
		case csiSlow:
			// A slow backend finishes what it was asked even when the
			// caller has stopped waiting: the host must take the timeout
			// as "unknown", not as "not deleted".
			time.Sleep(delay)
			ctx = context.WithoutCancel(ctx)
		}
		return handler(ctx, req)
	}
}
