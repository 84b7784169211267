package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/kubeplug/kubeplug/abi"
)

// Module is a loaded, validated guest module with its pool of instances.
// Its methods are safe for concurrent use.
type Module struct {
	engine   *Engine
	source   string
	limits   Limits
	info     Info
	sum      [32]byte // the SHA-256 of the module as written
	manifest abi.Manifest
	// name is Name's; set by load and SetName before the first call.
	name string

	// runtime is the module's own wazero runtime, so that its memory cap
	// applies to this module only.
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	// pools holds one pool per hook the manifest declares (nil for the
	// others), so that one hook's calls never queue behind another's.
	pools []*pool[*instance]
	log   atomic.Pointer[slog.Logger]

	closeOnce sync.Once
	closeErr  error
	// interrupted is set when Close closes the runtime under calls in flight.
	interrupted atomic.Bool
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
	if err == nil {
		err = checkManifest(m.source, man, version)
	}
	if err == nil {
		err = checkHookExports(m.source, compiled, man.Hooks)
	}
	if err != nil {
		inst.close()
		return err
	}
	m.manifest = *man
	var first *pool[*instance]
	m.pools = make([]*pool[*instance], len(hookTable))
	for h, spec := range hookTable {
		if slices.Contains(man.Hooks, string(spec.Name)) {
			m.pools[h] = newPool[*instance](m.limits.Instances)
			if first == nil {
				first = m.pools[h]
			}
		}
	}
	m.info.Name, m.info.Version = man.Name, man.Version
	m.name = man.Name
	m.setLogger(m.engine.logger.With("module", man.Name))
	first.seed(inst) // checkManifest refuses a manifest without hooks
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

// Manifest returns the manifest the module declared.
func (m *Module) Manifest() abi.Manifest { return m.manifest }

// Info describes the module.
func (m *Module) Info() Info { return m.info }

// Name names the module in its errors and log records: the manifest's name
// unless SetName gave another.
func (m *Module) Name() string { return m.name }

// SetName names the module as its operator does (the entry's name in
// host.yaml), so that its errors and its guest's log records say which
// entry they come from, even when several entries run modules whose
// manifests share a name. Call it before the module's first call.
func (m *Module) SetName(name string) {
	m.name = name
	m.setLogger(m.engine.logger.With("module", name))
}

// Limits returns the module's limits, defaults filled in.
func (m *Module) Limits() Limits { return m.limits }

// Stats counts the module's instances, of all its hooks together.
func (m *Module) Stats() Stats {
	var s Stats
	for _, p := range m.pools {
		if p != nil {
			s = s.plus(p.stats())
		}
	}
	return s
}

func (m *Module) logger() *slog.Logger     { return m.log.Load() }
func (m *Module) setLogger(l *slog.Logger) { m.log.Store(l) }

// Close stops new calls, waits until ctx is done for calls in flight to
// finish, and then releases the module's instances and runtime, interrupting
// any call still running. Close is idempotent.
func (m *Module) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		// Pools close one after the other, each under ctx: a module's
		// hooks share its deadline for draining.
		for _, p := range m.pools {
			if p != nil && !p.close(ctx) {
				m.interrupted.Store(true)
			}
		}
		if err := m.release(context.WithoutCancel(ctx)); err != nil {
			m.closeErr = fmt.Errorf("close module %q: %w", m.name, err)
		}
		m.engine.forget(m)
	})
	return m.closeErr
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
