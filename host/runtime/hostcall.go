package runtime

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/kubeplug/kubeplug/abi"
)

// Every host function a guest can reach (kubeplug's own imports, WASI's,
// the Extism kernel's and log functions) runs guardHostCall before it does
// any work. The checkpoints (checkpoint.go) bound the guest's own code; a
// host function runs outside them, so without the guard one call could do
// work the guest chose the size of (copy a 120 MiB log block, walk 16 M
// iovecs, sleep for an hour) past the call's deadline and past a drain.
// The guard, in order:
//
//   - ends the call if its deadline passed, its caller gave up, or its
//     module was closed under it (a drain that gave up waiting);
//   - refuses a request over the function's per-call bound (hostCallBounds,
//     below), which ends the call with an error naming the function, what
//     it was asked for and the bound;
//   - charges the work the request will do to the call's host-work budget
//     (maxCallHostBytes), and ends the call once it is spent.
//
// So one host call does at most a bounded amount of work, and the deadline
// is checked between any two of them: a call ends within its deadline plus
// the longest host call (RATIONALE.md, "Why is every host call charged
// before it runs?").

// Per-call bounds of the host functions (SECURITY.md, "Limits and their
// defaults").
const (
	// maxCallHostBytes is the host-work budget of one call into a guest:
	// the bytes its host functions may read, write or copy for it (an
	// iovec's 8 bytes and the data it spans, a poll subscription's 48 and
	// its event's 32, a log message, a kernel block). A host call that
	// moves nothing costs nothing: like the guest's own instructions, it
	// is bounded by the deadline, which the guard checks at every call.
	maxCallHostBytes = 256 << 20

	// maxIOVecs bounds the iovecs of one fd_read, fd_write, fd_pread or
	// fd_pwrite: POSIX's IOV_MAX on Linux.
	maxIOVecs = 1024
	// maxPollSubscriptions bounds the subscriptions of one poll_oneoff.
	maxPollSubscriptions = 1024
	// maxRandomBytes bounds one random_get.
	maxRandomBytes = 1 << 20
	// maxPathBytes bounds a path passed to a path_* function: PATH_MAX.
	maxPathBytes = 4096
	// maxDirBufBytes bounds fd_readdir's buffer.
	maxDirBufBytes = 1 << 20
)

// hostBudget is what is left of one call's host-work budget.
type hostBudget struct{ left int64 }

func (b *hostBudget) reset() { b.left = maxCallHostBytes }

// hostCallError is a request a host function refused: it ends the call.
type hostCallError struct {
	fn, msg string
}

func (e *hostCallError) Error() string { return "host call " + e.fn + " refused: " + e.msg }

// refuse ends the call in flight with a hostCallError.
func refuse(fn, format string, args ...any) {
	panic(&hostCallError{fn: fn, msg: fmt.Sprintf(format, args...)})
}

// callKey finds a call's callContext through contexts layered over it
// (go-sdk wraps the call's context before it calls host functions).
type callKey struct{}

// callOf returns the callContext of the call whose context is ctx, or nil.
func callOf(ctx context.Context) *callContext {
	if c, ok := ctx.(*callContext); ok {
		return c
	}
	c, _ := ctx.Value(callKey{}).(*callContext)
	return c
}

// guardHostCall runs before host function fn does work of cost bytes for
// the call whose context is ctx; closed says the function's module was
// closed under the call. It returns only if fn may go on.
func guardHostCall(ctx context.Context, closed bool, fn string, cost uint64) {
	if c := callOf(ctx); c != nil && !time.Now().Before(c.deadline) {
		// The clock, not only the timer: on a starved machine the timer's
		// goroutine may run late, and the guest must not go on meanwhile.
		c.interrupt(context.DeadlineExceeded, false)
	}
	guardHostCallByTimer(ctx, closed, fn, cost)
}

// guardHostCallByTimer is guardHostCall without its clock read: the
// context (the deadline's timer, the caller), the instance's closing and
// the charge. Only a call that moves a fixed few bytes may skip the clock,
// and only some of the time (extism_env.go, smallCallSkipsClock).
func guardHostCallByTimer(ctx context.Context, closed bool, fn string, cost uint64) {
	checkpointDeadline(ctx)
	if closed {
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	}
	chargeHostCall(ctx, fn, cost)
}

// chargeHostCall charges cost bytes of host work to the call whose context
// is ctx, and ends the call once its budget is spent.
func chargeHostCall(ctx context.Context, fn string, cost uint64) {
	c := callOf(ctx)
	if c == nil {
		return // not a call into a guest: a host function called by the host
	}
	if cost > uint64(c.host.left) {
		c.host.left = 0
		refuse(fn, "the call's host functions would move more than the budget of %s per call: do less in one call", humanBytes(maxCallHostBytes))
	}
	c.host.left -= int64(cost)
}

// timeLeft returns how long the call whose context is ctx may still run.
func timeLeft(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(d), true
}

// wasiCost returns the bytes a WASI function will move for params, after
// refusing a request over its bound. mem is the calling guest's memory.
type wasiCost func(ctx context.Context, fn string, mem api.Memory, params []uint64) uint64

// hostCallBounds are the WASI functions that do work of a size the guest
// chooses, and how much. Every other WASI function does a fixed amount and
// is charged hostCallBaseCost.
var hostCallBounds = map[string]wasiCost{
	"fd_read":   iovecCost(false),
	"fd_write":  iovecCost(true),
	"fd_pread":  iovecCost(false),
	"fd_pwrite": iovecCost(true),

	"poll_oneoff": pollCost,

	"random_get": func(_ context.Context, fn string, _ api.Memory, p []uint64) uint64 {
		n := uint32(p[1])
		if n > maxRandomBytes {
			refuse(fn, "%d bytes asked for, more than the per-call limit of %s: ask in smaller pieces", n, humanBytes(maxRandomBytes))
		}
		return uint64(n)
	},
	"fd_readdir": func(_ context.Context, fn string, _ api.Memory, p []uint64) uint64 {
		return bounded(fn, "buffer", uint32(p[2]), maxDirBufBytes)
	},
	"fd_prestat_dir_name":     pathCost(2),
	"path_create_directory":   pathCost(2),
	"path_filestat_get":       pathCost(3),
	"path_filestat_set_times": pathCost(3),
	"path_link":               pathCost(3, 6),
	"path_open":               pathCost(3),
	"path_readlink":           pathCost(2),
	"path_remove_directory":   pathCost(2),
	"path_rename":             pathCost(2, 5),
	"path_symlink":            pathCost(1, 4),
	"path_unlink_file":        pathCost(2),
	"sock_recv":               iovecCost(false), // (fd, ri_data, ri_data_len, ...): iovecs too
	"sock_send":               iovecCost(true),
}

// iovecCost bounds the iovecs of fd_read, fd_write, fd_pread, fd_pwrite,
// sock_recv and sock_send (fd, iovs, iovs_len, ...) and charges them and
// the bytes they span. A guest can write only to its stdout
// and stderr, whose writers (lineWriter) take no more than what is left
// of the call's log budget: a write is charged that much at most.
func iovecCost(write bool) wasiCost {
	return func(ctx context.Context, fn string, mem api.Memory, p []uint64) uint64 {
		iovs, n := uint32(p[1]), uint32(p[2])
		if n > maxIOVecs {
			refuse(fn, "%d iovecs, more than the per-call limit of %d: use fewer, larger buffers", n, maxIOVecs)
		}
		var bytes uint64
		if b, ok := mem.Read(iovs, n*8); ok { // out of range: WASI fails it with EFAULT
			for i := range n {
				bytes += uint64(binary.LittleEndian.Uint32(b[8*i+4:]))
			}
		}
		if c := callOf(ctx); write && c != nil {
			bytes = min(bytes, uint64(c.log.bytes))
		}
		return uint64(n)*8 + bytes
	}
}

// pollCost bounds poll_oneoff (in, out, nsubscriptions, nevents): the
// subscriptions' count, and their clocks: a sleep that would outlast the
// call's deadline ends the call as the deadline would, at once.
func pollCost(ctx context.Context, fn string, mem api.Memory, p []uint64) uint64 {
	in, n := uint32(p[0]), uint32(p[2])
	if n > maxPollSubscriptions {
		refuse(fn, "%d subscriptions, more than the per-call limit of %d", n, maxPollSubscriptions)
	}
	if b, ok := mem.Read(in, n*48); ok {
		left, ok := timeLeft(ctx)
		for i := range n {
			s := b[48*i:]
			// tag 0 is a clock; flags bit 0 is an absolute time
			if ok && s[8] == 0 && binary.LittleEndian.Uint16(s[40:])&1 == 0 &&
				binary.LittleEndian.Uint64(s[24:]) > uint64(max(left, 0)) {
				panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
			}
		}
	}
	return uint64(n) * (48 + 32)
}

// pathCost charges the (pointer, length) paths whose lengths are the
// parameters at idx, each bounded by maxPathBytes.
func pathCost(idx ...int) wasiCost {
	return func(_ context.Context, fn string, _ api.Memory, p []uint64) uint64 {
		var cost uint64
		for _, i := range idx {
			cost += bounded(fn, "path", uint32(p[i]), maxPathBytes)
		}
		return cost
	}
}

// bounded refuses n bytes of what over limit, and returns n.
func bounded(fn, what string, n, limit uint32) uint64 {
	if n > limit {
		refuse(fn, "a %s of %d bytes, more than the per-call limit of %s", what, n, humanBytes(uint64(limit)))
	}
	return uint64(n)
}

// withWASIGuard returns ctx with the listener factory that guards every
// WASI function: a host module compiled under it (wazero's WASI module,
// for a native module's runtime and inside go-sdk's) runs guardHostCall
// before each of its functions, with the calling guest's memory. A
// listener rather than a wrapper: go-sdk instantiates WASI itself, and a
// wrapper cannot call wazero's implementation with the guest as caller.
func withWASIGuard(ctx context.Context) context.Context {
	return experimental.WithFunctionListenerFactory(ctx, wasiGuardFactory{})
}

type wasiGuardFactory struct{}

func (wasiGuardFactory) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	if def.ModuleName() != abi.WASIModule || def.GoFunction() == nil {
		return nil // not WASI: the guest's own functions, go-sdk's, the kernel's
	}
	return &wasiGuard{cost: hostCallBounds[def.Name()]}
}

// wasiGuard guards one WASI function.
type wasiGuard struct{ cost wasiCost }

func (g *wasiGuard) Before(ctx context.Context, mod api.Module, def api.FunctionDefinition, params []uint64, _ experimental.StackIterator) {
	var cost uint64
	closed := mod.IsClosed()
	if g.cost != nil && !closed {
		checkpointDeadline(ctx) // before reading the request
		cost = g.cost(ctx, def.Name(), mod.Memory(), params)
	}
	guardHostCall(ctx, closed, def.Name(), cost)
}

func (*wasiGuard) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}

func (*wasiGuard) Abort(context.Context, api.Module, api.FunctionDefinition, error) {}
