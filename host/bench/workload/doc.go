// Package workload holds what the host's benchmarks share: fixed reconcile
// inputs built by the real snapshot builder, guests built from source, and
// the native baseline of the same module code.
//
// A test binary holds one registered SDK module, so each module's benchmark
// is a package of its own (bench, bench/retention, bench/reclaim) and this
// package is what they have in common.
package workload
