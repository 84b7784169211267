// Command retentionlite is a kubeplug guest module as a vendor might ship a
// cheaper take on KEP-1847: under whenDeleted: Delete it gives every claim
// of a StatefulSet a controller reference to the set, so that the garbage
// collector deletes the claims with the set, as the reference module
// guests/retention does. It does not implement whenScaled: on a scale-down
// under whenScaled: Delete it leaves the condemned replica's claim to the set
// where the reference hands it to its pod. The demo runs it in shadow mode
// beside the reference (compareWith: retention) to show that difference.
//
// It imports only sdk and abi: it is built as a WASI reactor with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
package main
