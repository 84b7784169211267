// Package metrics defines the host's Prometheus metrics and serves them with
// the health endpoints. Every series carries the module's name where it is
// about one module, so that two modules on one host can be told apart.
//
// It also carries client-go's own series (workqueue_*, rest_client_*,
// leader_election_*) under the names kube-controller-manager and
// controller-runtime give them, through client-go's metric seams
// (clientgo.go).
//
// It must not import the controllers: they report to it. Of client-go it
// imports the seams alone (util/workqueue, tools/metrics), not the
// elector: host/app hands LeaderElection to it.
package metrics
