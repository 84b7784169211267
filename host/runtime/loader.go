package runtime

import (
	"context"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/internal/checkpoint"
)

// Loaded is a loaded module of either kind, native (*Module) or Extism
// (*Plugin), as the host and kubeplug's commands hold it. Consumers take the
// small interface of what they call (controller.Guest, admission.Admitter,
// harness.Module); Call serves every hook, Reconcile and Admit are its typed
// forms, so a new hook adds no method here.
type Loaded interface {
	Manifest() abi.Manifest
	Call(ctx context.Context, h abi.Hook, req abi.HookRequest) (*abi.Response, error)
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

// Profile describes a runtime profile, a kind of module the runtime loads
// (SPEC.md): the native kubeplug ABI, or the Extism profile.
type Profile struct {
	// Name names the profile in `kubeplug inspect`: "kubeplug", "extism".
	Name string
	// Label describes a module of the profile in inspect's text; empty for
	// the native profile.
	Label string
	// Memories is how many linear memories under the cap each instance has:
	// the guest's, and any the profile adds (Extism's kernel's); Memory
	// says whose they are when there are more than one.
	Memories int
	Memory   string
}

// HostMemoryBound is Limits.HostMemoryBound for a module of profile p: each
// memory past the first adds one more linear memory at the cap per instance.
func (p Profile) HostMemoryBound(l Limits) uint64 {
	l = l.withDefaults()
	return l.HostMemoryBound() + uint64(max(p.Memories-1, 0))*uint64(l.Instances)*uint64(l.memoryPages())*pageSize
}

// LinearMemoryBound is the part of HostMemoryBound that is the instances'
// linear memories at their cap: memory the host maps outside Go's heap, which
// GOMEMLIMIT does not see (see memory_linux.go).
func (p Profile) LinearMemoryBound(l Limits) uint64 {
	l = l.withDefaults()
	return uint64(max(p.Memories, 1)) * uint64(l.Instances) * uint64(l.memoryPages()) * pageSize
}

// profile is a registered runtime profile: how its modules are recognized
// and loaded.
type profile struct {
	Profile
	// detect reports whether wasm is a module of the profile.
	detect func(wasm []byte) bool
	load   func(e *Engine, ctx context.Context, source string, wasm []byte, limits Limits) (Loaded, error)
}

// profiles are the runtime profiles, tried in order: the first whose detect
// accepts the bytes loads them. A new profile is a file of its own (its
// profile value, its module type over base) and an entry here. The native
// profile comes last and takes anything: its load says what is wrong with
// bytes that are no module.
var profiles = []profile{extismProfile, nativeProfile}

// LoadAny loads wasm with the first profile that recognizes it: as an
// Extism plugin when it imports from ExtismEnv, and as a native kubeplug
// module otherwise (see Load and LoadPlugin, whose errors it returns). It is
// the one way the host and its commands load a module.
func (e *Engine) LoadAny(ctx context.Context, source string, wasm []byte, limits Limits) (Loaded, error) {
	for _, p := range profiles {
		if p.detect(wasm) {
			return p.load(e, ctx, source, wasm, limits)
		}
	}
	return nil, loadError(source, ErrNotModule, "no runtime profile recognizes it: point the module at a .wasm file")
}

// IsExtism reports whether wasm is an Extism plugin: a WebAssembly module
// that imports from ExtismEnv. Bytes it cannot read are not one (Load then
// says what is wrong with them).
func IsExtism(wasm []byte) bool {
	mods, err := checkpoint.ImportModules(wasm)
	return err == nil && mods[ExtismEnv]
}
