package controller

import "errors"

// ErrPanic wraps the error of a reconcile that panicked: the panic was
// recovered, and the key is retried with backoff.
var ErrPanic = errors.New("reconcile panicked")
