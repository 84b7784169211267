package runtime

import (
	"errors"
	"fmt"
	"time"
)

// Load errors. Load wraps each so that errors.Is matches, in an error that
// names the module's source and says what to do.
var (
	// ErrNotModule: the bytes are not a (valid) WebAssembly binary.
	ErrNotModule = errors.New("not a WebAssembly module")
	// ErrABIVersion: the module's ABI version marker names a version this
	// host cannot run, is malformed, or is not the only one. (A module with
	// no marker at all fails with ErrMissingExport.)
	ErrABIVersion = errors.New("incompatible ABI version")
	// ErrMissingExport: a required export (the version marker, _initialize,
	// kubeplug_malloc, kubeplug_manifest, memory, a declared hook's entry
	// point) is absent or has the wrong signature.
	ErrMissingExport = errors.New("missing export")
	// ErrForbiddenImport: the module imports something the host does not
	// provide.
	ErrForbiddenImport = errors.New("forbidden import")
	// ErrManifest: the module's manifest is malformed or invalid.
	ErrManifest = errors.New("invalid manifest")
	// ErrStart: the module could not be instantiated or initialized.
	ErrStart = errors.New("module failed to start")
)

// ErrClosed is returned by calls on a closed Module or Engine.
var ErrClosed = errors.New("closed")

// ErrLimits wraps every error of Limits.Validate, and Load's refusal of a
// module whose declared memory does not fit Limits.MemoryBytes.
var ErrLimits = errors.New("invalid limits")

// loadError formats a Load failure: `load module "<source>": <kind>: <reason>`.
func loadError(source string, kind error, format string, args ...any) error {
	return fmt.Errorf("load module %q: %w: %s", source, kind, fmt.Sprintf(format, args...))
}

// ErrorKind classifies a failed guest call. It is an error itself, so that
// errors.Is(err, runtime.KindDeadline) matches a *CallError of that kind.
type ErrorKind int

const (
	// KindTrap: the guest trapped or exited (a Go panic the guest did not
	// recover ends here). The instance is discarded.
	KindTrap ErrorKind = iota + 1
	// KindDeadline: the call ran past Limits.Deadline, or its context was
	// canceled, and the guest was interrupted. The instance is discarded.
	KindDeadline
	// KindMemory: the guest ran out of memory at Limits.MemoryBytes. The
	// instance is discarded.
	KindMemory
	// KindOutput: the output region was out of bounds, larger than
	// Limits.MaxOutputBytes, or not one well-formed message. The instance is
	// discarded.
	KindOutput
	// KindStatus: the guest answered with a status other than abi.StatusOK;
	// Err wraps abi.StatusError's error. The instance is kept unless the
	// status is abi.StatusPanic.
	KindStatus
	// KindInput: the host could not encode the request or place it in guest
	// memory.
	KindInput
)

// String returns the kind's metric label: "trap", "deadline", "memory",
// "output", "status" or "input".
func (k ErrorKind) String() string {
	switch k {
	case KindTrap:
		return "trap"
	case KindDeadline:
		return "deadline"
	case KindMemory:
		return "memory"
	case KindOutput:
		return "output"
	case KindStatus:
		return "status"
	case KindInput:
		return "input"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

func (k ErrorKind) Error() string { return k.String() }

// ErrorKinds lists every ErrorKind, for callers that label metrics by kind.
func ErrorKinds() []ErrorKind {
	return []ErrorKind{KindTrap, KindDeadline, KindMemory, KindOutput, KindStatus, KindInput}
}

// CallError is the error of a failed hook call.
type CallError struct {
	// Module is the manifest name of the module.
	Module string
	// Hook is the hook called (abi.HookAdmit); empty means reconcile.
	Hook string
	// Key is the reconcile request's key, or the admission request's
	// operation, resource and object.
	Key  string
	Kind ErrorKind
	Err  error
}

// Error reads like
// `module "retention" reconcile "default/web": deadline exceeded after 1s: guest interrupted`.
func (e *CallError) Error() string {
	hook := e.Hook
	if hook == "" {
		hook = "reconcile"
	}
	return fmt.Sprintf("module %q %s %q: %v", e.Module, hook, e.Key, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// Is matches the error's Kind.
func (e *CallError) Is(target error) bool {
	k, ok := target.(ErrorKind)
	return ok && k == e.Kind
}

// interruptedError is the Err of a KindDeadline CallError.
type interruptedError struct {
	after    time.Duration // Limits.Deadline
	byParent bool          // the caller's context ended first
	cause    error         // context.DeadlineExceeded or the caller's ctx.Err()
}

func (e *interruptedError) Error() string {
	if e.byParent {
		return fmt.Sprintf("caller gave up (%v): guest interrupted", e.cause)
	}
	return fmt.Sprintf("deadline exceeded after %v: guest interrupted", e.after)
}

func (e *interruptedError) Unwrap() error { return e.cause }
