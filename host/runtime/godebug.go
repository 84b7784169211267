package runtime

import "github.com/tetratelabs/wazero"

// guestGODEBUG is the one environment variable a guest's WASI environment
// holds: the settings Go's runtime reads when a stock-Go guest starts. A
// guest built from another language ignores it.
//
// gcstoptheworld=1 makes every collection run with the world stopped. A
// guest is single-threaded and runs only while the host is inside one of its
// exports, so Go's concurrent collector gains nothing from its concurrency
// there and pays for it: write barriers on while a cycle lasts, marking done
// by allocation assists, and, in the collection the SDK forces between calls
// (sdk/internal/raw/gcpace.go), a scheduler that parks the only goroutine and
// spins on poll_oneoff between the turns of the collector's fractional
// worker. Stopped, the cycle marks in one pass. The heap goal (GOGC) and so
// the memory a guest uses are unchanged. RATIONALE.md, "Why do guests run
// with GODEBUG=gcstoptheworld=1?", has the measurements.
const guestGODEBUG = "gcstoptheworld=1"

// withGoRuntime gives a guest its environment: GODEBUG and nothing else.
func withGoRuntime(cfg wazero.ModuleConfig) wazero.ModuleConfig {
	return cfg.WithEnv("GODEBUG", guestGODEBUG)
}
