// Command storagepolicy is an example admission module, as a storage vendor
// might ship one: it refuses StatefulSets whose claims would be kept forever
// (persistentVolumeClaimRetentionPolicy.whenDeleted Retain, the default) in
// namespaces labelled storage-policy=strict, and labels every claim created
// for a StatefulSet's template with the set's name, which it finds in the
// related objects the host gathers from its caches.
//
// Build it with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared; the
// host serves it at /admit/<entry name> (kubeplug run --webhook-addr) and
// kubeplug webhook-config registers it.
package main
