package harness

import "errors"

// Errors returned by Serve. Match them with errors.Is.
var (
	// ErrFrame reports a malformed or truncated request frame.
	ErrFrame = errors.New("malformed harness frame")
)
