package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/kubeplug/kubeplug/abi"
)

// maxKeptInput is the largest encode buffer an instance keeps between calls;
// a bigger request's buffer is dropped so one huge subject does not pin it.
const maxKeptInput = 4 << 20

// instance is one guest instance with everything a call needs looked up
// once. It serves one call at a time (the pool guarantees it).
type instance struct {
	module   *Module
	mod      api.Module
	mem      api.Memory
	malloc   api.Function
	hooks    []api.Function // nil for hooks the module does not export
	manifest api.Function

	ctx   *callContext
	stack [2]uint64 // CallWithStack's params and results
	in    []byte    // the encoded request, reused across calls
	// region is the input region kubeplug_malloc last returned, lent to the
	// host until the next malloc (SPEC.md): inputs that fit are written there
	// without calling malloc, saving a guest call per reconcile.
	region, regionCap uint32
	stdout            *lineWriter
	stderr            *lineWriter
	oom               atomic.Bool // stderr said the guest ran out of memory
}

// newInstance instantiates the module and runs _initialize. Both run under
// the same rules as a hook call: one Limits.Deadline, enforced by the
// checkpoints (a start function or _initialize that loops is interrupted),
// the memory cap and allocator, and the per-call log budget. On failure
// kind classifies err.
func (m *Module) newInstance(parent context.Context) (inst *instance, kind ErrorKind, err error) {
	inst = &instance{module: m, ctx: newCallContext()}
	inst.stdout = newLineWriter(m, inst.ctx, "stdout", slog.LevelInfo, nil)
	inst.stderr = newLineWriter(m, inst.ctx, "stderr", slog.LevelWarn, &inst.oom)
	cfg := withGoRuntime(withClocks(wazero.NewModuleConfig())).
		WithName(""). // anonymous, so that one runtime holds many instances
		WithStartFunctions().
		WithStdout(inst.stdout).
		WithStderr(inst.stderr).
		WithRandSource(newRandSource(inst.ctx))

	ctx := inst.ctx.start(experimental.WithMemoryAllocator(parent, newMemoryAllocator(inst)), m.limits.Deadline)
	mod, err := m.runtime.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		kind, err := inst.failed(err, m.limits)
		inst.close()
		return nil, kind, fmt.Errorf("instantiate: %w", err)
	}
	inst.mod = mod
	inst.mem = mod.Memory()
	inst.malloc = mod.ExportedFunction(abi.ExportMalloc)
	inst.manifest = mod.ExportedFunction(abi.ExportManifest)
	inst.hooks = make([]api.Function, len(hookTable))
	for h, spec := range hookTable {
		inst.hooks[h] = mod.ExportedFunction(spec.Export)
	}
	if err := mod.ExportedFunction(abi.ExportInitialize).CallWithStack(ctx, inst.stack[:]); err != nil {
		kind, err := inst.failed(err, m.limits)
		inst.close()
		return nil, kind, fmt.Errorf("%s: %w", abi.ExportInitialize, err)
	}
	if inst.finish() { // the deadline fired as _initialize returned
		err := inst.ctx.interrupted(m.limits.Deadline)
		inst.close()
		return nil, KindDeadline, fmt.Errorf("%s: %w", abi.ExportInitialize, err)
	}
	return inst, 0, nil
}

// finish disarms the call context after a call and reports what the call's
// log budget dropped. It reports whether the context fired.
func (inst *instance) finish() bool {
	fired := inst.ctx.finish()
	inst.ctx.log.report(inst.module.logger())
	return fired
}

// close releases the instance, logging any unfinished output line.
func (inst *instance) close() {
	inst.stdout.flush()
	inst.stderr.flush()
	if inst.mod != nil {
		_ = inst.mod.Close(context.Background())
	}
}

// call calls hook h with req and returns its decoded, checked response.
// keep says whether the instance may serve another call.
//
// One deadline covers the whole round trip (malloc when the lent region is
// too small, then the hook), so the timer is armed once per call.
func (inst *instance) call(parent context.Context, l Limits, h hookID, req abi.HookRequest) (resp *abi.Response, kind ErrorKind, keep bool, err error) {
	in, err := req.MarshalMsg(inst.in[:0])
	if err != nil {
		return nil, KindInput, true, fmt.Errorf("encode request: %w", err)
	}
	if cap(in) <= maxKeptInput {
		inst.in = in
	} else {
		inst.in = nil
	}

	ctx := inst.ctx.start(parent, l.Deadline)
	if inst.region == 0 || uint32(len(in)) > inst.regionCap {
		// Ask for a quarter more than needed so that inputs growing a little
		// do not call malloc every time.
		size := uint64(len(in)) + uint64(len(in))/4
		inst.stack[0] = size
		if err := inst.malloc.CallWithStack(ctx, inst.stack[:]); err != nil {
			kind, err := inst.failed(err, l)
			return nil, kind, false, fmt.Errorf("%s: %w", abi.ExportMalloc, err)
		}
		inst.region, inst.regionCap = uint32(inst.stack[0]), uint32(size)
		if inst.region == 0 {
			inst.finish()
			return nil, KindInput, false, fmt.Errorf("%s could not allocate %d bytes for the request", abi.ExportMalloc, size)
		}
	}
	ptr := inst.region
	if !inst.mem.Write(ptr, in) {
		inst.finish()
		return nil, KindInput, false, fmt.Errorf("%s returned [%#x, +%d), outside the guest's %d-byte memory", abi.ExportMalloc, ptr, len(in), inst.mem.Size())
	}
	inst.stack[0], inst.stack[1] = uint64(ptr), uint64(len(in))
	if err := inst.hooks[h].CallWithStack(ctx, inst.stack[:]); err != nil {
		kind, err := inst.failed(err, l)
		return nil, kind, false, err
	}
	// A hook that returned just as the context fired has an answer, but its
	// instance is closed or closing: use the answer, drop the instance.
	keep = !inst.finish()

	out, err := inst.output(inst.stack[0], l)
	if err != nil {
		return nil, KindOutput, false, err
	}
	resp, err = decodeOutput(out, l)
	if err != nil {
		return nil, KindOutput, false, err
	}
	if err := abi.StatusError(resp.Status, resp.Message); err != nil {
		return nil, KindStatus, keep && resp.Status != abi.StatusPanic, err
	}
	if err := hookTable[h].check(resp, l); err != nil {
		return nil, KindOutput, false, err
	}
	return resp, 0, keep, nil
}

// callManifest calls kubeplug_manifest and returns the packed region.
func (inst *instance) callManifest(parent context.Context, l Limits) (uint64, ErrorKind, error) {
	ctx := inst.ctx.start(parent, l.Deadline)
	if err := inst.manifest.CallWithStack(ctx, inst.stack[:]); err != nil {
		kind, err := inst.failed(err, l)
		return 0, kind, err
	}
	if inst.finish() {
		return 0, KindDeadline, inst.ctx.interrupted(l.Deadline)
	}
	return inst.stack[0], 0, nil
}

// failed disarms the call context after a guest call failed and classifies
// the failure.
func (inst *instance) failed(err error, l Limits) (ErrorKind, error) {
	var interrupted *interruptedError
	if inst.finish() {
		interrupted = inst.ctx.interrupted(l.Deadline)
	}
	return inst.classify(err, l, interrupted)
}

// output checks the packed region a guest returned and copies it out.
//
// The copy is needed: the guest may reuse the region on the next call, and
// decoded values share memory with the bytes they were decoded from (abi's
// decoders do not copy strings), so the decoder must get bytes that are never
// written again.
func (inst *instance) output(packed uint64, l Limits) ([]byte, error) {
	ptr, n := abi.UnpackPtrLen(packed)
	if int64(n) > int64(l.MaxOutputBytes) {
		return nil, fmt.Errorf("output region of %d bytes is larger than the %s limit", n, humanBytes(uint64(l.MaxOutputBytes)))
	}
	view, ok := inst.mem.Read(ptr, n)
	if !ok {
		return nil, fmt.Errorf("output region [%#x, +%d) is outside the guest's %d-byte memory", ptr, n, inst.mem.Size())
	}
	return bytes.Clone(view), nil
}

// classify turns a failed call into a kind and a readable error. interrupted
// is why the call's context fired, if it did.
func (inst *instance) classify(err error, l Limits, interrupted *interruptedError) (ErrorKind, error) {
	if interrupted != nil {
		return KindDeadline, interrupted
	}
	if err := checkpointExit(err, l); err != nil {
		return KindDeadline, err
	}
	if err := hostCallRefused(err); err != nil {
		return KindTrap, err
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		if inst.outOfMemory(l) {
			return KindMemory, &guestError{fmt.Sprintf("out of memory at the %s limit: guest exited with code %d", humanBytes(uint64(l.memoryPages())*pageSize), exit.ExitCode()), err}
		}
		return KindTrap, &guestError{fmt.Sprintf("guest exited with code %d (see the module's stderr in the log)", exit.ExitCode()), err}
	}
	if inst.outOfMemory(l) {
		return KindMemory, &guestError{fmt.Sprintf("out of memory at the %s limit: %s", humanBytes(uint64(l.memoryPages())*pageSize), firstLine(err)), err}
	}
	return KindTrap, &guestError{"guest trapped: " + firstLine(err), err}
}

// outOfMemory reports whether a failed call died of memory exhaustion: its
// stderr said so (Go's runtime does), or its memory is within one Go heap
// arena (4 MiB) of the cap, where growing further fails.
func (inst *instance) outOfMemory(l Limits) bool {
	if inst.oom.Load() {
		return true
	}
	const slack = 4 << 20
	return inst.mem != nil && uint64(inst.mem.Size())+slack >= uint64(l.memoryPages())*pageSize
}

// checkpointExit returns the deadline error of a call a checkpoint ended
// (checkpoint.go), or nil when err is another failure.
func checkpointExit(err error, l Limits) *interruptedError {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return &interruptedError{after: l.Deadline, cause: context.DeadlineExceeded}
		case sys.ExitCodeContextCanceled:
			return &interruptedError{after: l.Deadline, cause: context.Canceled}
		}
	}
	return nil
}

// hostCallRefused returns the error of a call a host function ended by
// refusing its request (hostcall.go), or nil when err is another failure.
func hostCallRefused(err error) error {
	var hc *hostCallError
	if errors.As(err, &hc) {
		return &guestError{hc.Error(), err}
	}
	return nil
}

// guestError is a failure inside the guest: a one-line message over the
// wazero error, which may carry a multi-line stack trace.
type guestError struct {
	msg string
	err error
}

func (e *guestError) Error() string { return e.msg }
func (e *guestError) Unwrap() error { return e.err }

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// humanBytes writes n in the largest binary unit that divides it.
func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
