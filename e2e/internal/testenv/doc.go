// Package testenv is what the end-to-end tests share: a TestMain that runs a
// package's tests against one control plane (Main), building the kubeplug
// binary and guest modules from this checkout, starting `kubeplug run` as a
// separate process against the control plane, reading its metrics,
// registering its webhook with the API server, a namespace per test, and
// waiting for conditions.
//
// It must not import the host (github.com/kubeplug/kubeplug/host) or the
// guest modules: the tests reach kubeplug only as a separate process.
package testenv
