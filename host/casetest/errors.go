package casetest

import (
	"fmt"
	"strconv"
)

// InputError is unusable input: a case file that cannot be read or parsed,
// or that names an unknown kind or field. It is formatted "file:line: msg",
// or "file: msg" when no line applies.
type InputError struct {
	File string
	Line int
	Msg  string
}

func (e *InputError) Error() string {
	if e.Line <= 0 {
		return e.File + ": " + e.Msg
	}
	return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
}

func inputErrorf(file string, line int, format string, args ...any) *InputError {
	return &InputError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}
