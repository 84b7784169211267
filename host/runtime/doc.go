// Package runtime runs kubeplug guest modules: it compiles them with wazero
// through one shared compilation cache, validates them against the ABI
// (github.com/kubeplug/kubeplug/abi and its SPEC.md), and calls their hooks
// from a bounded pool of sandboxed instances.
//
// Sandbox, per module:
//   - its own wazero.Runtime, so that the memory cap (Limits.MemoryBytes)
//     applies to that module only;
//   - a per-call deadline (Limits.Deadline), enforced by checkpoints the
//     runtime inserts into the module's loops, functions and bulk memory
//     and table instructions at load (internal/checkpoint), so that no
//     guest can run past it, looping, recursing or filling; instantiation
//     and _initialize run under it too. The module is validated as written
//     before the rewrite, and the rewrite refuses any index beyond the
//     module's own, so that guest code cannot reach the checkpoints;
//   - its tables capped in all (Limits.MaxTableElements), and its memory a
//     reserved mapping grown in place (memory_linux.go), so that the host's
//     memory stays within Limits.HostMemoryBound;
//   - WASI preview 1 with no arguments, an environment of GODEBUG only
//     (the Go runtime's collector settings, godebug.go), no preopened
//     directories, a real monotonic clock, and the host's deterministic
//     wall clock and randomness (clock.go);
//     stdout and stderr go to the Logger, one record per non-empty line,
//     within a per-call log budget (log.go);
//   - imports from wasi_snapshot_preview1 and kubeplug only;
//   - its output refused beyond Limits.MaxActions (before decoding) and
//     its strings copied and checked (valid UTF-8, at most 64 KiB).
//
// A call that traps, exits, runs out of memory or time, or returns an output
// region the host cannot trust fails with a *CallError and its instance is
// discarded; the next call gets a fresh one. Status errors the guest reports
// itself keep the instance (except abi.StatusPanic).
//
// Typical use:
//
//	eng, _ := runtime.NewEngine(ctx, runtime.Options{CacheDir: dir})
//	defer eng.Close(ctx)
//	mod, err := eng.Load(ctx, "retention.wasm", wasm, runtime.DefaultLimits())
//	res, err := mod.Reconcile(ctx, req)
//
// The corpus of hostile modules the tests run is in package hostile.
//
// Extism plugins (SPEC.md, "The Extism profile") run through
// github.com/extism/go-sdk under the same sandbox: Engine.LoadAny tells the
// two kinds apart, LoadPlugin loads a *Plugin, and both kinds satisfy
// Loaded (extism*.go, loader.go).
//
// This package imports wazero, the standard library, abi and Extism's
// go-sdk only. It must know nothing of Kubernetes: no k8s.io/* and no other
// host package.
package runtime
