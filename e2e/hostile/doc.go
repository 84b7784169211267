// Package hostile runs kubeplug's corpus of hostile modules
// (host/runtime/hostile: raw WebAssembly and Go guests, built by the tests)
// through `kubeplug run` on a real kube-apiserver, with the garbage collector
// and the claim-protection controller beside it, and a CSI driver that records
// every DeleteVolume: one host runs every module of the corpus that loads
// beside a well-behaved module, and must stay up, keep serving /metrics and
// the well-behaved module, report each hostile module's error with its name
// and reason, harm no object, and end on SIGTERM; each module the host refuses
// to load is refused with exit status 2, naming it.
//
// The tests reach kubeplug only as a separate process; the corpus package is
// imported to build the modules, nothing else of the host.
package hostile
