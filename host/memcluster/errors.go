package memcluster

import "errors"

var (
	// ErrInvalidObject wraps every reason Load refuses an object.
	ErrInvalidObject = errors.New("invalid object")
	// ErrDriverNotConfigured is returned by DeleteVolume for a CSI driver the
	// cluster was not configured with.
	ErrDriverNotConfigured = errors.New("csi driver not configured")
)
