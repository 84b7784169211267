package oci

import "errors"

var (
	// ErrLayout: the artifact is not a wasm module in a layout kubeplug
	// accepts (see Layouts).
	ErrLayout = errors.New("not a wasm module artifact")

	// ErrTooLarge: the registry describes a module, or a manifest, larger
	// than its limit, so it is not downloaded.
	ErrTooLarge = errors.New("too large")

	// ErrDigest: bytes read from the registry or the cache do not have the
	// digest that names them, or a module has another sha256 than its pin.
	ErrDigest = errors.New("digest mismatch")

	// ErrUnauthorized: the registry refused the credentials given, or asked
	// for some and none were given.
	ErrUnauthorized = errors.New("registry refused access")

	// ErrNotFound: the registry has no such repository, tag or digest.
	ErrNotFound = errors.New("not found in registry")

	// ErrUnsigned: a signature is required and the artifact has none.
	ErrUnsigned = errors.New("module not signed")

	// ErrSignature: the artifact has signatures, and none verifies with
	// the required key for this artifact's digest.
	ErrSignature = errors.New("signature does not verify")

	// ErrKey: a key file cannot be used (not PEM, not a supported key).
	ErrKey = errors.New("unusable key")

	// ErrTimeout: the registry did not answer, or not all of it, within
	// the operation's timeout (Options.Timeout).
	ErrTimeout = errors.New("registry timed out")

	// ErrCache: a cache entry is not a regular file of a plausible size,
	// or not the bytes its name says; it is refused and fetched again.
	ErrCache = errors.New("bad cache entry")

	// ErrReference: a string given as an image reference does not parse
	// as one.
	ErrReference = errors.New("not an image reference")
)
