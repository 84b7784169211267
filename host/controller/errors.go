package controller

import "errors"

// ErrPanic wraps the error of a reconcile that panicked: the panic was
// recovered, and the key is retried with backoff.
var ErrPanic = errors.New("reconcile panicked")

// ErrSwap wraps the error of a Swap that cannot replace the controller's
// module: another name or another subject, which takes a new controller.
var ErrSwap = errors.New("module cannot be swapped into this controller")
