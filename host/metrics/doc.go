// Package metrics defines the host's Prometheus metrics and serves them with
// the health endpoints. Every series carries the module's name where it is
// about one module, so that two modules on one host can be told apart.
//
// It must not import the controllers: they report to it.
package metrics
