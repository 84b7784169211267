package setctl

import "errors"

// ErrTimeout: what the stand-in waited for did not happen within
// Set.Timeout; the error wrapping it says what it waited for.
var ErrTimeout = errors.New("setctl: timed out")
