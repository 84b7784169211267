package runtime

import (
	"context"
	"errors"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/kubeplug/kubeplug/host/runtime/internal/checkpoint"
)

// The deadline is enforced by checkpoints the runtime inserts into every
// module at load (package checkpoint): the guest counts down at loop heads,
// function entries and every checkpoint.MaxStretch instructions of straight
// code, and calls checkpointImport when the count reaches zero. RATIONALE.md
// says why, and what it costs ("Why does the host insert deadline
// checkpoints into every module ...?").
var checkpointImport = checkpoint.Import{Module: "kubeplug:runtime", Name: "checkpoint"}

// checkpointInterval is how many counted checks (loop heads, function
// entries, stretches of straight code) a guest passes between two
// checkpoints: a few hundred microseconds of guest code, about 1.3 ms of
// the longest straight stretches (RATIONALE.md, "Why is straight code
// checked every 256 instructions?"), so that a deadline is kept to within
// about a millisecond while the checkpoints themselves cost nothing
// measurable.
const checkpointInterval = 1 << 16

// instrument inserts the checkpoints into wasm and caps its tables;
// rename, if set, renames import modules (checkpoint.Limits.RenameImports).
func instrument(source string, wasm []byte, l Limits, rename map[string]string) ([]byte, error) {
	out, err := checkpoint.InsertWithLimits(wasm, checkpointImport, checkpointInterval,
		checkpoint.Limits{TableElements: l.MaxTableElements, RenameImports: rename})
	switch {
	case err == nil:
		return out, nil
	case errors.Is(err, checkpoint.ErrTableLimit):
		return nil, loadError(source, ErrLimits, "%s: raise the module's limits.maxTableElements (now %d) if it really needs that many, or fix the module",
			strings.TrimPrefix(err.Error(), checkpoint.ErrTableLimit.Error()+": "), l.MaxTableElements)
	case errors.Is(err, checkpoint.ErrReservedImport):
		return nil, loadError(source, ErrForbiddenImport, "%v: remove the import", err)
	case errors.Is(err, checkpoint.ErrUnsupported):
		return nil, loadError(source, ErrNotModule, "%v: build it for WebAssembly 2.0 (stock Go or TinyGo with GOOS=wasip1)", err)
	}
	return nil, loadError(source, ErrNotModule, "%v: rebuild it, or check that the file is not truncated", err)
}

// instantiateCheckpoint provides checkpointImport to the module's runtime.
func instantiateCheckpoint(ctx context.Context, r wazero.Runtime) error {
	_, err := r.NewHostModuleBuilder(checkpointImport.Module).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(checkpointFunc), nil, []api.ValueType{api.ValueTypeI32}).
		Export(checkpointImport.Name).
		Instantiate(ctx)
	return err
}

// checkpointFunc lets the guest go on for another interval, unless the call's
// context is done (its deadline passed or its caller gave up) or the module
// was closed under it: then it ends the call. The caller learns why from the
// call's context (see callContext), not from this error.
func checkpointFunc(ctx context.Context, mod api.Module, stack []uint64) {
	checkpointDeadline(ctx)
	if mod.IsClosed() {
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	}
	stack[0] = checkpointInterval
}

// checkpointDeadline ends the call (it panics with the exit error wazero
// turns into the call's error) when ctx is done.
func checkpointDeadline(ctx context.Context) {
	if err := ctx.Err(); err != nil {
		code := uint32(sys.ExitCodeDeadlineExceeded)
		if errors.Is(err, context.Canceled) {
			code = sys.ExitCodeContextCanceled
		}
		panic(sys.NewExitError(code))
	}
}
