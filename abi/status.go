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

// StatusError turns a Response's status and message into a Go error, nil for
// StatusOK. It is the one place on each side where statuses become errors.
func StatusError(s Status, message string) error {
	var base error
	switch s {
	case StatusOK:
		return nil
	case StatusBadInput:
		base = ErrBadInput
	case StatusFailed:
		base = ErrFailed
	case StatusPanic:
		base = ErrPanic
	case StatusNoHook:
		base = ErrNoHook
	default:
		return fmt.Errorf("%w %d: %s", ErrStatus, int32(s), message)
	}
	if message == "" {
		return base
	}
	return fmt.Errorf("%w: %s", base, message)
}
