package policy

import "errors"

// Errors of the deletion secret resolution. Each is wrapped with the
// StorageClass and parameter at fault; the module reports them in a Warning
// event on the PersistentVolume and retries, as external-provisioner does.
var (
	// ErrSecretParams: the StorageClass names the secret inconsistently
	// (a name without a namespace, both the current and the deprecated key,
	// an empty value).
	ErrSecretParams = errors.New("invalid provisioner secret parameters")
	// ErrSecretTemplate: a secret template uses a token that cannot be
	// resolved when a volume is deleted.
	ErrSecretTemplate = errors.New("unresolvable provisioner secret template")
	// ErrSecretRef: the resolved secret namespace or name is not a valid
	// Kubernetes name.
	ErrSecretRef = errors.New("invalid provisioner secret reference")
)
