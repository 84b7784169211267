// Package abi is the one versioned contract between the kubeplug host and its
// WebAssembly guests: export and import names, the version marker, status
// codes, the wire types of reconcile inputs and results, and their codec;
// the descriptors of hooks, subjects, action types and kinds every other
// list derives from (contract.go), the manifest's one validation
// (validate.go) and the test harness's frame protocol (frame.go).
//
// SPEC.md beside this file is the authority on calling conventions and memory
// ownership; this package gives those names and types to Go code on both sides.
//
// abi imports only the standard library and the MessagePack runtime
// (github.com/tinylib/msgp/msgp). It must never import k8s.io/* or anything
// host-specific: guests link it.
package abi

//go:generate ../hack/gen-abi.sh
