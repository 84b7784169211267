package actions

import "errors"

var (
	// ErrRefused wraps the reason an action was refused: unknown type, not
	// allowed by the module's capabilities, a target that is not an object
	// of the reconcile input, a malformed payload, or a CSI driver the host
	// is not configured for. A refused action is not executed; the others
	// still are.
	ErrRefused = errors.New("action refused")
	// ErrConflict wraps a write that the API server refused because the
	// object is no longer the one the module saw (resourceVersion or UID
	// precondition failed, or it is gone), and a write the executor did not
	// send for the same reason. The subject must be reconciled again on
	// fresh state; nothing after it was executed.
	ErrConflict = errors.New("object changed since the module saw it")
)
