// Command retention is kubeplug's reference module for KEP-1847: it keeps the
// owner references of a StatefulSet's PersistentVolumeClaims as
// spec.persistentVolumeClaimRetentionPolicy asks, so that the garbage
// collector deletes the claims on scale-down (whenScaled: Delete) and with the
// set (whenDeleted: Delete), and never otherwise. Its admit hook gives a
// claim being created its set's reference under whenDeleted: Delete, so that
// a set deleted right after a scale-up takes its new claim with it.
//
// Every decision mirrors kube-controller-manager's StatefulSet controller
// (pkg/controller/statefulset), function by function, so that on a cluster
// whose controller manager also implements KEP-1847 the two write the same
// references and neither undoes the other. README.md maps each rule to the
// upstream function it mirrors.
//
// The code is in ./policy. Files by concern: module.go registers the module; policy.go reads the
// retention policy and the ordinal range; owners.go holds the per-claim
// checks (isClaimOwnerUpToDate, updateClaimOwnerRefForSetAndPod and their
// helpers); replicas.go sorts claims into replicas and decides when
// condemned replicas are reached; decide.go walks the replicas as upstream's
// updateStatefulSet does and turns the outcome into actions; events.go words
// the ConflictingController event; admit.go is the admit hook that stamps a
// claim being created with its set's reference, decided by owners.go.
//
// It imports only sdk and abi (and the standard library), never k8s.io/*,
// and stays TinyGo-compatible: no fmt or reflection on the decision path. It
// is built as a WASI reactor with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
package main
