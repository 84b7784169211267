// Command reclaim is kubeplug's reference module for KEP-2644, "honor the
// PersistentVolume reclaim policy": it keeps deletion-protection finalizers
// on PersistentVolumes as the external-provisioner library and the in-tree
// PV controller do, and, for the CSI drivers the host is configured for,
// deletes the backing volume of a released PersistentVolume whose policy is
// Delete before it lets the PV object go, so that a PV deleted before its
// claim does not leak storage. An in-tree volume migrated to CSI is handled
// as the CSI volume it migrates to, as external-provisioner handles it, the
// host translating its in-tree source. README.md has the decision table and
// names the upstream function each row mirrors.
//
// It imports only the standard library, sdk and abi, never k8s.io/*: it is
// built as a WASI reactor with GOOS=wasip1 GOARCH=wasm go build
// -buildmode=c-shared, and must stay TinyGo-compatible (no reflection beyond
// the SDK's config decoding, no regexp on the hot path).
//
// The code is in ./policy, which registers the module when imported; this
// package only imports it for the WASI build.
package main
