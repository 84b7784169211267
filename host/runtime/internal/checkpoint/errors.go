package checkpoint

import (
	"errors"
	"fmt"
)

var (
	// ErrMalformed: the bytes are not a well-formed WebAssembly binary.
	ErrMalformed = errors.New("malformed WebAssembly")
	// ErrUnsupported: the module is well-formed but uses something Insert
	// cannot rewrite (a component, an instruction of a proposal the runtime
	// does not support).
	ErrUnsupported = errors.New("unsupported WebAssembly")
	// ErrReservedImport: the module already imports from the module name
	// Insert was asked to add; only the host may use it.
	ErrReservedImport = errors.New("reserved import")
	// ErrTableLimit: the module's tables are larger than
	// Limits.TableElements allows.
	ErrTableLimit = errors.New("tables over the limit")
)

// at wraps kind with where in the binary it happened.
func at(kind error, where string, off int, format string, args ...any) error {
	return fmt.Errorf("%w: %s at byte %#x: %s", kind, where, off, fmt.Sprintf(format, args...))
}
