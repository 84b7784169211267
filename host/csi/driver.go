package csi

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kubeplug/kubeplug/host/config"
)

// driver is one configured CSI driver and its connection.
type driver struct {
	config.CSIDriver
	log *slog.Logger

	mu       sync.Mutex
	conn     *grpc.ClientConn // nil until the first call
	verified bool             // conn passed verify
	closed   bool
}

// deleteVolume calls DeleteVolume, verifying the driver first if needed.
func (d *driver) deleteVolume(ctx context.Context, handle string, secrets map[string]string) error {
	conn, err := d.ready(ctx)
	if err != nil {
		return err
	}
	callCtx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	_, err = csipb.NewControllerClient(conn).DeleteVolume(callCtx, &csipb.DeleteVolumeRequest{VolumeId: handle, Secrets: secrets})
	switch status.Code(err) {
	case codes.OK:
		d.log.Info("deleted backing volume", "volumeHandle", handle)
		return nil
	case codes.NotFound:
		// The specification has drivers answer OK for a volume that does not
		// exist; some answer NotFound instead, which means the same here.
		d.log.Info("backing volume already gone", "volumeHandle", handle)
		return nil
	}
	return d.fail(conn, "DeleteVolume", err)
}

// ready returns the driver's connection, dialing it on first use and
// verifying it until verification passes, and again whenever the
// connection has not stayed ready since: gRPC reconnects by itself, and
// what answers on the socket after a reconnection may be another driver
// (a socket taken over by another binary), which must never be sent a
// deletion. Concurrent calls may each verify; the calls are read-only, and
// holding no lock across them lets Close cancel them.
func (d *driver) ready(ctx context.Context) (*grpc.ClientConn, error) {
	conn, verified, err := d.dial()
	if err != nil {
		return nil, err
	}
	if verified && conn.GetState() == connectivity.Ready {
		return conn, nil
	}
	if err := d.check(ctx, conn); err != nil {
		return nil, err
	}
	return conn, nil
}

// probe verifies the driver's connection whether or not it passed before:
// a driver that went away since is found now, not at the next DeleteVolume.
func (d *driver) probe(ctx context.Context) error {
	conn, _, err := d.dial()
	if err != nil {
		return err
	}
	return d.check(ctx, conn)
}

// dial returns the driver's connection, made on first use, and whether it
// passed verification.
func (d *driver) dial() (*grpc.ClientConn, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, false, ErrClosed
	}
	if d.conn == nil {
		// NewClient does not connect; the first call does, and fails fast
		// with Unavailable when nothing listens on the socket.
		conn, err := grpc.NewClient("unix://"+d.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, false, fmt.Errorf("connect to %s: %w", d.Endpoint, err)
		}
		d.conn = conn
	}
	return d.conn, d.verified, nil
}

// check verifies conn and marks it verified when it passes, unverified
// when it fails: a probe that finds another driver behind the connection
// stops every DeleteVolume until one passes again.
func (d *driver) check(ctx context.Context, conn *grpc.ClientConn) error {
	vendorVersion, err := d.verify(ctx, conn)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		if d.conn == conn {
			d.verified = false
		}
		return err
	}
	if d.conn == conn && !d.verified {
		d.verified = true
		d.log.Info("connected to CSI driver", "endpoint", d.Endpoint, "vendorVersion", vendorVersion)
	}
	return nil
}

// verify checks that conn reaches the configured driver and that the driver
// can delete volumes, and returns the driver's vendor version.
func (d *driver) verify(ctx context.Context, conn *grpc.ClientConn) (string, error) {
	callCtx, cancel := context.WithTimeout(ctx, d.Timeout)
	info, err := csipb.NewIdentityClient(conn).GetPluginInfo(callCtx, &csipb.GetPluginInfoRequest{})
	cancel()
	if err != nil {
		return "", d.fail(conn, "GetPluginInfo", err)
	}
	if info.GetName() != d.Name {
		return "", fmt.Errorf("%w: %s serves driver %q, not %q; point endpoint: for %q at its controller's socket",
			ErrWrongDriver, d.Endpoint, info.GetName(), d.Name, d.Name)
	}
	callCtx, cancel = context.WithTimeout(ctx, d.Timeout)
	caps, err := csipb.NewControllerClient(conn).ControllerGetCapabilities(callCtx, &csipb.ControllerGetCapabilitiesRequest{})
	cancel()
	if err != nil {
		return "", d.fail(conn, "ControllerGetCapabilities", err)
	}
	canDelete := slices.ContainsFunc(caps.GetCapabilities(), func(c *csipb.ControllerServiceCapability) bool {
		return c.GetRpc().GetType() == csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME
	})
	if !canDelete {
		return "", fmt.Errorf("%w: the controller at %s does not advertise CREATE_DELETE_VOLUME; remove %q from csiDrivers: in the host configuration and leave its volumes to their provisioner",
			ErrCannotDelete, d.Endpoint, d.Name)
	}
	return info.GetVendorVersion(), nil
}

// fail describes a failed call on conn. When the driver is unreachable it
// also drops conn: the next call dials afresh instead of waiting out gRPC's
// reconnect backoff, and verifies again, since the driver may come back as
// another binary behind the same socket.
func (d *driver) fail(conn *grpc.ClientConn, method string, err error) error {
	if status.Code(err) == codes.Unavailable {
		d.mu.Lock()
		if d.conn == conn {
			d.conn, d.verified = nil, false
			// Closing only releases conn's resources; nothing useful can
			// be done about an error from it.
			_ = conn.Close()
		}
		d.mu.Unlock()
	}
	return d.callError(method, err)
}

// close closes the connection, if any, and refuses later calls.
func (d *driver) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.conn == nil {
		return nil
	}
	err := d.conn.Close()
	d.conn, d.verified = nil, false
	return err
}
