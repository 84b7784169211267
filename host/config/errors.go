package config

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalid wraps every problem Load and Parse report: a file that is
	// not YAML, an unknown field, a value out of range, a missing module file.
	ErrInvalid = errors.New("invalid host configuration")

	// ErrDigest: Module.Read found a module file whose sha256 is not the one
	// the configuration pins.
	ErrDigest = errors.New("module digest mismatch")

	// ErrNotAllowed: Module.Grant found a manifest that asks for more than
	// the entry's allow: list grants, or an enforce-mode entry with no
	// allow: list.
	ErrNotAllowed = errors.New("capabilities not allowed")
)

// problem is one thing wrong in a configuration file. Its message reads
// `<file>:<line>: <field>: <msg>`, so editors and terminals can jump to it.
type problem struct {
	file  string
	line  int    // 1-based; 0 when unknown
	field string // e.g. modules[1].limits.memory; empty for the whole file
	msg   string
}

func (p *problem) Error() string {
	s := p.file
	if p.line > 0 {
		s = fmt.Sprintf("%s:%d", s, p.line)
	}
	if p.field != "" {
		s += ": " + p.field
	}
	return s + ": " + p.msg
}

func (p *problem) Unwrap() error { return ErrInvalid }
