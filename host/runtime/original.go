package runtime

import (
	"context"
	"sync"

	"github.com/tetratelabs/wazero"
)

// The checkpoint rewrite (package checkpoint) adds a global, a type, an
// import and a function to every module. Validating only the rewritten
// module would accept a module that is invalid as written but valid once
// the rewrite has added what it names: one that writes the countdown and
// never stops. So the module is validated as written first, by compiling it
// with wazero's interpreter, which decodes and validates exactly as the
// compiler does but compiles several times faster and needs no cache
// (RATIONALE.md: "Why is a module validated before the checkpoint
// rewrite?"). The rewrite also refuses, on its own, any index beyond the
// module's own index spaces.

// newValidator returns the runtime that validates modules as written.
func newValidator(ctx context.Context) wazero.Runtime {
	return wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
}

// maxValidated bounds the digests an Engine remembers; past it, it forgets
// them all (a host loads a handful of modules; tests load many).
const maxValidated = 1024

// validatedSet is the digests of the modules an Engine validated, so that a
// hot swap back to a known module or a reload of the same bytes does not
// validate it again.
type validatedSet struct {
	mu   sync.Mutex
	sums map[[32]byte]struct{}
}

func (v *validatedSet) has(sum [32]byte) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.sums[sum]
	return ok
}

func (v *validatedSet) add(sum [32]byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.sums == nil || len(v.sums) >= maxValidated {
		v.sums = map[[32]byte]struct{}{}
	}
	v.sums[sum] = struct{}{}
}

// validate checks wasm, whose digest is sum, as written.
func (e *Engine) validate(ctx context.Context, source string, sum [32]byte, wasm []byte) error {
	if e.validated.has(sum) {
		return nil
	}
	compiled, err := e.validator.CompileModule(ctx, wasm)
	if err != nil {
		return loadError(source, ErrNotModule, "%v: rebuild it, or check that the file is not truncated", err)
	}
	_ = compiled.Close(context.WithoutCancel(ctx))
	e.validated.add(sum)
	return nil
}
