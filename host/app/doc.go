// Package app assembles the live host that `kubeplug run` starts: it loads
// the host configuration and its modules, connects to the API server, starts
// the informers, one controller per module, the metrics and health endpoints,
// and, when asked, leader election.
//
// The command-line layer (host/cmd/kubeplug) only parses flags into Options;
// tests start the same host with Run.
package app
