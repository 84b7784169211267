package runtime

import "github.com/tetratelabs/wazero"

// withClocks gives a guest its clocks: the host's real monotonic clock for
// clock_time_get(CLOCKID_MONOTONIC), and wazero's deterministic wall clock
// for clock_time_get(CLOCKID_REALTIME).
//
// The monotonic clock must behave like a clock. wazero's default fake clock
// advances 1 ms at every read, so the durations a guest's language runtime
// measures count clock reads, not work: stock Go's GC times its assists and
// cycles with it, its CPU limiter sees a collector that takes nearly all of
// the time, and throttles it; a long-lived instance's heap then grows until
// the memory cap (about 1,500 reconciles of 1 set + 100 pods + 100 claims at
// 128 MiB). The real clock gives the same pacing as native.
//
// The wall clock stays deterministic: a module takes the time it decides
// with from the request (abi.ReconcileRequest.Now), never from the system,
// so a case file gives the same answer on every run. Sleeps (poll_oneoff on
// a clock) still return at once; a guest that waits on the monotonic clock
// spins inside its own code, where the checkpoints end it at the deadline.
func withClocks(cfg wazero.ModuleConfig) wazero.ModuleConfig {
	return cfg.WithSysNanotime()
}
