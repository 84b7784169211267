// Package policy is the templateupdate module's code: it registers the
// module with the SDK when imported. The guest's main package (one directory
// up) imports it for the WASI build; the host's benchmarks import it to run
// the same code natively. See ../doc.go and ../README.md for what the module
// decides.
package policy
