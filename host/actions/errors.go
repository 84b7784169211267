package actions

import "errors"

var (
	// ErrRefused wraps the reason an action was refused: unknown type, not
	// allowed by the module's capabilities, a target that is not an object
	// of the reconcile input, a malformed payload, a CSI driver the host
	// is not configured for, or a rule of the host's own (a volume that
	// external-provisioner would not delete, an owner reference to an object
	// that is not the subject or one of its pods). A refused action is not
	// executed, nor are the ones after it.
	ErrRefused = errors.New("action refused")
	// ErrConflict wraps a write that the API server refused because the
	// object is no longer the one the module saw (resourceVersion or UID
	// precondition failed, or it is gone), and a write the executor did not
	// send for the same reason. The subject must be reconciled again on
	// fresh state; nothing after it was executed.
	ErrConflict = errors.New("object changed since the module saw it")
	// ErrSecretParams wraps why the deletion secret a StorageClass names
	// cannot be resolved for a volume; the deletion fails and is retried,
	// as external-provisioner's does.
	ErrSecretParams = errors.New("invalid provisioner secret parameters")
)
