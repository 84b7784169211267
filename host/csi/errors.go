package csi

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Configuration (New).
var (
	// ErrInvalidDriver wraps every reason New refuses a driver: no name, a
	// duplicate name, an endpoint that is not an absolute socket path.
	ErrInvalidDriver = errors.New("invalid csi driver")
)

// DeleteVolume, before any call to the driver.
var (
	// ErrDriverNotConfigured: the action names a driver the host was not
	// configured with.
	ErrDriverNotConfigured = errors.New("csi driver not configured")

	// ErrEmptyHandle: the action carries no volume handle.
	ErrEmptyHandle = errors.New("empty volume handle")

	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("csi client closed")
)

// DeleteVolume, from the driver.
var (
	// ErrWrongDriver: GetPluginInfo on the configured socket names another
	// driver.
	ErrWrongDriver = errors.New("socket serves another csi driver")

	// ErrCannotDelete: the driver does not advertise the controller
	// capability CREATE_DELETE_VOLUME.
	ErrCannotDelete = errors.New("csi driver cannot delete volumes")

	// ErrCall wraps every failed gRPC call to a driver, together with the
	// gRPC status error, so that status.Code(err) gives the driver's code.
	ErrCall = errors.New("csi call failed")
)

// callError describes a failed gRPC call to d: the method, the socket, the
// driver's status and what to do about it.
func (d *driver) callError(method string, err error) error {
	return fmt.Errorf("%w: %s at %s: %w; %s", ErrCall, method, d.Endpoint, err, d.advice(method, status.Code(err)))
}

// advice says what an operator can do about a call that failed with code.
func (d *driver) advice(method string, code codes.Code) string {
	switch code {
	case codes.Unavailable:
		return "check that the driver's controller is running and serving that socket"
	case codes.DeadlineExceeded:
		return fmt.Sprintf("the driver did not answer within %s; check its controller's logs, or raise timeout: for it in the host configuration", d.Timeout)
	case codes.Unimplemented:
		return fmt.Sprintf("the socket does not serve %s; point endpoint: at the driver's controller socket, not its node socket", method)
	case codes.Canceled:
		return "the call was cancelled (the host is stopping or the reconcile was abandoned); it is retried on the next reconcile"
	}
	if method == "DeleteVolume" {
		switch code {
		case codes.InvalidArgument, codes.Unauthenticated, codes.PermissionDenied:
			return "check the provisioner secret the StorageClass names (csi.storage.k8s.io/provisioner-secret-name and -namespace) and the driver controller's logs"
		case codes.FailedPrecondition:
			return "the driver refuses to delete a volume still in use (attached, or with snapshots); release it and the host retries"
		}
	}
	return "see the driver controller's logs"
}
