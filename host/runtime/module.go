package runtime

import (
	"context"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/internal/projection"
)

// nativeInfo describes the kubeplug ABI's own profile (SPEC.md), as Info.Profile.
var nativeInfo = Profile{Name: "kubeplug", Memories: 1}

// nativeProfile registers it (profiles).
var nativeProfile = profile{
	Profile: nativeInfo,
	detect:  func([]byte) bool { return true },
	load: func(e *Engine, ctx context.Context, source string, wasm []byte, limits Limits) (Loaded, error) {
		return e.Load(ctx, source, wasm, limits)
	},
}

// Module is a loaded, validated guest module of the native profile with its
// pools of instances. Its methods (base's) are safe for concurrent use.
type Module struct {
	base[*instance]
	sum [32]byte // the SHA-256 of the module as written

	// runtime is the module's own wazero runtime, so that its memory cap
	// applies to this module only.
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
}

// newModule returns the native module loaded from source, before load.
func newModule(e *Engine, source string, limits Limits, info Info, sum [32]byte) *Module {
	m := &Module{base: newBase[*instance](e, source, limits, info), sum: sum}
	m.base.newInstance = m.newInstance
	m.base.call = func(ctx context.Context, inst *instance, h hookID, req abi.HookRequest) (*abi.Response, ErrorKind, bool, error) {
		return inst.call(ctx, m.limits, h, req)
	}
	m.free = m.release
	m.setLogger(e.logger.With("module", source))
	return m
}

// load compiles, validates and starts the module, leaving its first instance
// idle in the pool.
func (m *Module) load(ctx context.Context, wasm []byte) error {
	// The rewrite comes first: it checks every length in the binary against
	// the bytes that back it before any decoder allocates for it.
	instrumented, err := instrument(m.source, wasm, m.limits, nil)
	if err != nil {
		return err
	}
	if err := m.engine.validate(ctx, m.source, m.sum, wasm); err != nil {
		return err
	}
	wasm = instrumented
	cfg := wazero.NewRuntimeConfig().
		WithCompilationCache(m.engine.cache).
		WithMemoryLimitPages(m.limits.memoryPages())
	m.runtime = wazero.NewRuntimeWithConfig(ctx, cfg)

	compiled, err := m.runtime.CompileModule(experimental.WithCompilationWorkers(ctx, m.engine.workers), wasm)
	if err != nil {
		if strings.Contains(err.Error(), "over limit of") {
			return loadError(m.source, ErrLimits, "%v: raise the module's memory limit (now %d bytes)", err, m.limits.MemoryBytes)
		}
		return loadError(m.source, ErrNotModule, "%v: rebuild it, or check that the file is not truncated", err)
	}
	m.compiled = compiled
	version, err := checkVersion(m.source, compiled)
	if err != nil {
		return err
	}
	if err := checkImports(m.source, compiled); err != nil {
		return err
	}
	if err := checkExports(m.source, compiled); err != nil {
		return err
	}
	m.info.ABIVersion = version
	m.info.Exports, m.info.Imports = describeFuncs(compiled)

	if _, err := wasi_snapshot_preview1.Instantiate(withWASIGuard(ctx), m.runtime); err != nil {
		return fmt.Errorf("load module %q: provide WASI: %w", m.source, err)
	}
	if err := m.instantiateHost(ctx, m.runtime); err != nil {
		return fmt.Errorf("load module %q: provide host functions: %w", m.source, err)
	}
	if err := instantiateCheckpoint(ctx, m.runtime); err != nil {
		return fmt.Errorf("load module %q: provide checkpoints: %w", m.source, err)
	}

	inst, _, err := m.newInstance(ctx)
	if err != nil {
		return loadError(m.source, ErrStart, "%v: fix the module's initialization (its stderr is in the log)", err)
	}
	man, err := m.readManifest(ctx, inst)
	var proj *projection.Projection
	if err == nil {
		proj, err = checkManifest(m.source, man, version)
	}
	if err == nil {
		err = checkHookExports(m.source, compiled, man.Hooks)
	}
	if err != nil {
		inst.close()
		return err
	}
	m.started(*man, proj, inst)
	return nil
}

// readManifest calls kubeplug_manifest on inst and decodes the answer.
func (m *Module) readManifest(ctx context.Context, inst *instance) (*abi.Manifest, error) {
	packed, _, err := inst.callManifest(ctx, m.limits)
	if err != nil {
		return nil, loadError(m.source, ErrStart, "%s: %v: fix the module (its stderr is in the log)", abi.ExportManifest, err)
	}
	out, err := inst.output(packed, m.limits)
	if err != nil {
		return nil, loadError(m.source, ErrManifest, "%s: %v: fix the module", abi.ExportManifest, err)
	}
	man, err := abi.DecodeManifest(out)
	if err != nil {
		return nil, loadError(m.source, ErrManifest, "%s: %v: encode the manifest with github.com/kubeplug/kubeplug/abi", abi.ExportManifest, err)
	}
	if err := ownStrings(man); err != nil {
		return nil, loadError(m.source, ErrManifest, "%s: %v: fix the manifest the module returns", abi.ExportManifest, err)
	}
	return man, nil
}

// release closes the module's runtime and then its compiled code. The
// compilation cache is the engine's, shared by every module, and wazero
// keeps a module's machine code in it, whatever becomes of the runtime,
// until the compiled module itself is closed: without this, every module
// swapped out or refused after compiling stayed in memory until the host
// stopped (several times its size in code).
func (m *Module) release(ctx context.Context) error {
	err := m.runtime.Close(ctx)
	if m.compiled != nil {
		_ = m.compiled.Close(ctx)
	}
	return err
}
