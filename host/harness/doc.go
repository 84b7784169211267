// Package harness serves a loaded module to a test binary over stdin and
// stdout: it is the server side of "kubeplug harness --module M.wasm", which
// package sdk/sdktest starts when KUBEPLUG_TEST_WASM is set so that a
// guest's own tests run against the compiled module in the real runtime.
//
// The frame format is defined in abi/frame.go, which both sides use; this package
// implements the server half of it: it writes the manifest frame first, then
// answers each request frame with a response frame until end-of-file.
//
// harness imports only the standard library and abi. It knows nothing of
// wazero or Kubernetes: the module behind it is any Module.
package harness
