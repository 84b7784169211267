// Package demo is `make demo`: it starts the embedded control plane, runs
// `kubeplug run` with the modules that exist, applies the sample objects of
// examples/demo scene by scene, and says in plain words what each module
// decided and what changed in the cluster.
//
// Every scene waits for what it narrates to be true in the API server, and
// fails the demo otherwise, so the demo doubles as an end-to-end test.
package demo
