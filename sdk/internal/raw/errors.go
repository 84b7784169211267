package raw

import "errors"

// ErrRegistered is returned by Register when a module is already registered.
var ErrRegistered = errors.New("a module is already registered")

// badInput is a handler error that means the request itself was unusable.
type badInput struct{ msg string }

func (e *badInput) Error() string { return e.msg }

// BadInputError returns an error that makes Reconcile answer StatusBadInput
// with msg instead of StatusFailed: for requests the SDK cannot make sense
// of, which is the host's bug, not the module's.
func BadInputError(msg string) error { return &badInput{msg} }
