// Package bench holds the host's end-to-end reconcile benchmarks: a fixed
// StatefulSet workload built by the real snapshot builder, sent through the
// real runtime to a module compiled from internal/benchpolicy, and the same
// module code run natively in the same process as the baseline.
//
// Run them with `make bench`; BENCHMARKS.md records the numbers.
package bench
