// Package hostile is kubeplug's corpus of hostile modules: one module for each
// way a module can try to stop, crash, starve or misuse the host. The host's
// tests run every module of the corpus through the runtime, through
// `kubeplug test` and through the live host, and check that it is contained.
//
// The modules are built by the code of this package (raw WebAssembly written
// byte by byte, or Go guests compiled from the sources under guests/), never
// committed as binaries. Extism returns the hostile Extism plugins, raw
// WebAssembly too (extism.go).
//
// It imports the standard library, abi, and the runtime's internal wasm
// encoder; nothing of Kubernetes.
package hostile
