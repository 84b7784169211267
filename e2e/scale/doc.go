// Package scale measures what kubeplug costs on a cluster's worth of
// objects, and shows that sharding splits that cost between hosts.
//
// A fleet (fleet_test.go) is N StatefulSets of three replicas, each with
// its three pods, three bound claims and their bound CSI PersistentVolumes,
// over a few StorageClasses: created through the real kube-apiserver of the
// in-process control plane by parallel clients, already in the state the
// modules converge to, so that the only writes a host makes are the ones a
// change calls for. The host is the real `kubeplug run` process with
// guests/retention, guests/reclaim and examples/warnretain. No
// kube-controller-manager runs: no number here depends on one.
//
// TestScale runs a small fleet in make test and asserts convergence and
// zero writes in steady state; BenchmarkScale (make bench-scale) runs the
// full measurement at N=$SCALE_N and prints one row of BENCHMARKS.md's
// table, beside a bare client-go informer process (informerset/) as the
// reference. TestShards runs two hosts, each with its own label selector and
// leader Lease, on one control plane.
package scale
