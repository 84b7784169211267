// Package raw is the SDK's ABI layer: the guest exports and host imports of
// abi/SPEC.md, and the one dispatch function that turns an encoded request
// into an encoded response.
//
// Files follow the direction of the call: exports_wasip1.go holds the
// //go:wasmexport functions the host calls, imports_wasip1.go the
// //go:wasmimport functions the guest calls, and imports_native.go a fake host
// that stands in for them when the guest's code runs natively in tests;
// input.go holds the copy the reconcile export makes of each input, and
// gcpace.go with gc_wasip1.go the collection an export runs at the end of a
// call when Go's own would otherwise start inside the next one.
// Dispatch is shared by the wasm exports and the native harness
// (sdk/sdktest), so native tests exercise the codec too.
//
// raw imports only the standard library and abi. It must stay
// TinyGo-compatible: no reflection-heavy packages, no k8s.io/* imports.
package raw
