package main

import (
	"errors"
	"fmt"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // what was asked failed: a case, a module check
	exitInput   = 2 // the input is unusable: flags, arguments, files
)

// exitError carries the exit code of a failed command. Silent errors have
// already been reported on the command's output and print nothing more.
type exitError struct {
	code   int
	err    error
	silent bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// inputError is unusable input: exit status 2.
func inputError(err error) error { return &exitError{code: exitInput, err: err} }

func inputErrorf(format string, args ...any) error { return inputError(fmt.Errorf(format, args...)) }

// failure is a failure of what was asked: exit status 1.
func failure(err error) error { return &exitError{code: exitFailure, err: err} }

// exitCode returns the exit code for err, the status of a command's error.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return exitFailure
}

// silent reports whether err has been reported already.
func silent(err error) bool {
	var e *exitError
	return errors.As(err, &e) && e.silent
}
