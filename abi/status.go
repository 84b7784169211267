package abi

import (
	"errors"
	"fmt"
)

// Status says how a hook call ended. It travels in Response.Status.
type Status int32

const (
	// StatusOK: Response.Result holds the answer.
	StatusOK Status = 0
	// StatusBadInput: the guest could not decode its input.
	StatusBadInput Status = 1
	// StatusFailed: the module's own code returned an error.
	StatusFailed Status = 2
	// StatusPanic: the module's code panicked; the guest recovered and
	// reports the panic value in Response.Message.
	StatusPanic Status = 3
	// StatusNoHook: the guest was called for a hook it did not register.
	StatusNoHook Status = 4
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusBadInput:
		return "bad input"
	case StatusFailed:
		return "failed"
	case StatusPanic:
		return "panic"
	case StatusNoHook:
		return "no such hook"
	}
	return fmt.Sprintf("status(%d)", int32(s))
}

// Errors a Response's status turns into. Match them with errors.Is.
var (
	ErrBadInput = errors.New("guest could not decode its input")
	ErrFailed   = errors.New("module returned an error")
	ErrPanic    = errors.New("module panicked")
	ErrNoHook   = errors.New("module does not implement the hook")
	ErrStatus   = errors.New("unknown status")
)

// statuses pairs each error status with its sentinel.
var statuses = [...]struct {
	status Status
	err    error
}{
	{StatusBadInput, ErrBadInput},
	{StatusFailed, ErrFailed},
	{StatusPanic, ErrPanic},
	{StatusNoHook, ErrNoHook},
}

// statusSentinel is s's sentinel error, nil for StatusOK and unknown
// statuses.
func statusSentinel(s Status) error {
	for _, x := range statuses {
		if x.status == s {
			return x.err
		}
	}
	return nil
}

// StatusError turns a Response's status and message into a Go error, nil for
// StatusOK. It is the one place on each side where statuses become errors.
func StatusError(s Status, message string) error {
	if s == StatusOK {
		return nil
	}
	base := statusSentinel(s)
	if base == nil {
		return fmt.Errorf("%w %d: %s", ErrStatus, int32(s), message)
	}
	if message == "" {
		return base
	}
	return fmt.Errorf("%w: %s", base, message)
}

// StatusOf is StatusError's inverse: the status whose sentinel err matches
// (errors.Is); ok is false when it matches none.
func StatusOf(err error) (s Status, ok bool) {
	for _, x := range statuses {
		if errors.Is(err, x.err) {
			return x.status, true
		}
	}
	return StatusOK, false
}
