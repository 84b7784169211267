package runtime

import (
	"context"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/internal/checkpoint"
)

// Loaded is a loaded module of either kind, native (*Module) or Extism
// (*Plugin), as the host and kubeplug's commands hold it.
type Loaded interface {
	Manifest() abi.Manifest
	Reconcile(ctx context.Context, req *abi.ReconcileRequest) (*abi.Result, error)
	Admit(ctx context.Context, req *abi.AdmitRequest) (*abi.AdmitResponse, error)
	HasHook(hook string) bool
	Info() Info
	Limits() Limits
	Stats() Stats
	Name() string
	SetName(name string)
	Close(ctx context.Context) error
}

var (
	_ Loaded = (*Module)(nil)
	_ Loaded = (*Plugin)(nil)
)

// LoadAny loads wasm as an Extism plugin when it imports from ExtismEnv,
// and as a native kubeplug module otherwise (see Load and LoadPlugin, whose
// errors it returns). It is the one way the host and its commands load a
// module.
func (e *Engine) LoadAny(ctx context.Context, source string, wasm []byte, limits Limits) (Loaded, error) {
	if IsExtism(wasm) {
		return e.LoadPlugin(ctx, source, wasm, limits)
	}
	return e.Load(ctx, source, wasm, limits)
}

// IsExtism reports whether wasm is an Extism plugin: a WebAssembly module
// that imports from ExtismEnv. Bytes it cannot read are not one (Load then
// says what is wrong with them).
func IsExtism(wasm []byte) bool {
	mods, err := checkpoint.ImportModules(wasm)
	return err == nil && mods[ExtismEnv]
}
