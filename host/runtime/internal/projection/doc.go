// Package projection builds the reconcile input a module declared it reads
// (abi's Manifest.Projection, ABI 1.3): a copy of the request whose objects
// carry only the declared fields and their identity (abi.IdentityFields).
// The host keeps the whole request for itself: the executor's checks and
// preconditions read that one, never the copy the guest is sent, so a
// smaller projection never makes the host check less.
//
// It imports abi and the standard library only: the runtime applies it on
// its call path, for native modules and Extism plugins alike.
package projection
