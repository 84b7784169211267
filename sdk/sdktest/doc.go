// Package sdktest runs a guest module's code in its own tests, natively or as
// the compiled .wasm, with the same test code.
//
//	func TestWarns(t *testing.T) {
//		h := sdktest.New(t)
//		set := sdktest.StatefulSet("web", 3)
//		res := h.MustReconcile(sdktest.Request(now, set))
//		...
//	}
//
// Natively (the default), New calls the module that the test binary's
// package main registered in init(), through the SDK's dispatch and codec.
// When KUBEPLUG_TEST_WASM names the module's .wasm, New instead starts
// "$KUBEPLUG_BIN harness --module $KUBEPLUG_TEST_WASM" once per test binary
// and sends every request to it over the frames documented in abi/frame.go, so
// the compiled module runs in the host's real runtime.
//
// The builders (StatefulSet, Pod, Claim, ...) make objects with deterministic
// names and UIDs ("<name>-uid") in namespace "default", so table tests stay
// short.
//
// sdktest imports the standard library, abi, sdk and the SDK's raw layer. It
// is for tests only (it imports testing): the host must not import it.
package sdktest
