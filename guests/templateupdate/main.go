package main

// The module's code is in ./policy, which registers it when imported: the
// host's benchmarks import the same package to run it natively.
import _ "github.com/kubeplug/kubeplug/guests/templateupdate/policy"

// main is never called: the host runs the module as a WASI reactor.
func main() {}
