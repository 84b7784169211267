// Command templateupdate is kubeplug's module for KEP-4650 (June 2024
// draft): a StatefulSet's claims follow the volume claim templates of the
// VolumeClaimUpdate (kubeplug.dev/v1alpha1) that names the set, because
// kube-apiserver refuses any change to the set's own volumeClaimTemplates.
//
// The reconcile hook updates claims in place (server-side apply) in rollout
// order, holds the set's rollingUpdate.partition for LockStep, and writes the
// VolumeClaimUpdate's status; the admit hook gives a claim the StatefulSet
// controller creates from the old template the new one. README.md is the
// reference.
//
// The code is in ./policy. Files by concern: module.go registers the module;
// compat.go holds the per-claim rules (compatible, in-placeable, updating,
// failed, the storage rule); replica.go sorts claims into replicas;
// rollout.go walks the replicas in rollout order; partition.go holds and
// releases the LockStep partition; status.go counts and words the
// conditions and equal.go compares it with the last one written;
// messages.go words events and conditions; decide.go turns it all into
// actions; admit.go rewrites new claims.
//
// It imports only sdk and abi (and the standard library), never k8s.io/*,
// and stays TinyGo-compatible: no fmt or reflection on the decision path.
package main
