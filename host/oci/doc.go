// Package oci distributes kubeplug modules through OCI registries: it
// pushes a module with its manifest in the config blob, pulls one in any of
// the wasm artifact layouts in use (kubeplug's, Kubewarden's and the CNCF
// wasm layout), checks its size before download and its digest after,
// caches it on disk by digest, signs and verifies it with a public key in
// the format cosign writes (a Sigstore bundle attached as an OCI referrer),
// and watches a tag for a new digest. The same signatures, and other
// referrers such as an SBOM, are attached to and verified in an OCI image
// layout too (Attach, SignManifest, Verifier.VerifyManifest): make image
// signs the host's own image with them.
//
// Fetch is the one step that turns a host configuration's module entry
// (a file or an image) into verified bytes; the host and `kubeplug test`
// both call it.
//
// It talks to registries with oras-go and verifies with sigstore-go. It may
// import host/config (for module entries) and abi, and must not import
// client-go or any other host package: it hands out bytes, and what runs
// them is the caller's business.
package oci
