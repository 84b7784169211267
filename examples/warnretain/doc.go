// Command warnretain is a kubeplug guest module, written as a storage vendor
// would write one against the SDK: it records a Warning event on every
// StatefulSet whose claims outlive it (whenDeleted is Retain). README.md says
// what it watches, what it may do and how to configure it.
//
// It imports only sdk and abi, never k8s.io/*: it is built as a WASI reactor
// with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
package main
