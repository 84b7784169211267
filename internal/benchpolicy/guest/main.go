// Command guest is benchpolicy built as a module, for the host's benchmarks.
package main

import _ "github.com/kubeplug/kubeplug/internal/benchpolicy"

func main() {}
