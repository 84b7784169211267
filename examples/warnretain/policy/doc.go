// Package policy is warnretain's code (see ../README.md): it registers the
// module with the SDK when imported, so that the same code runs as the
// guest in .. and natively in the host's benchmarks, beside its
// AssemblyScript twin in ../../warnretain-as.
//
// It imports only sdk and abi, never k8s.io/*.
package policy
