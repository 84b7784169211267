package harness

import "github.com/kubeplug/kubeplug/abi"

// Errors returned by Serve. Match them with errors.Is.
var (
	// ErrFrame reports a malformed or truncated request frame.
	ErrFrame = abi.ErrFrame
)
