package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"sync"

	"github.com/tetratelabs/wazero"
)

// Options configure an Engine.
type Options struct {
	// CacheDir is where compiled modules are kept across processes (wazero's
	// file compilation cache). Empty keeps them in memory only.
	CacheDir string
	// Logger receives guest log lines and stdout/stderr, tagged
	// module=<name>. Nil means slog.Default().
	Logger *slog.Logger
	// CompileWorkers is how many goroutines compile one module's functions
	// in parallel. Zero means GOMAXPROCS: a first load or a hot swap is
	// rare, and the sooner it is validated the better.
	CompileWorkers int
	// GuestCalls is how many calls into guests, of all modules together,
	// run at once; the others wait their turn (gate.go). Zero means
	// GOMAXPROCS: each running call has a core, and the host's own work
	// still gets its turn at every checkpoint.
	GuestCalls int
}

// Engine loads modules. All modules of an Engine share one compilation cache,
// so loading the same bytes twice compiles them once.
type Engine struct {
	cache   wazero.CompilationCache
	logger  *slog.Logger
	workers int
	gate    *gate
	// validator checks modules as written, before the checkpoint rewrite
	// (see validate.go); validated remembers the digests it accepted.
	validator wazero.Runtime
	validated validatedSet

	mu sync.Mutex
	// modules are the loaded modules of either kind (*Module, *Plugin),
	// which Close closes.
	modules map[closer]struct{}
	closed  bool
	// loads counts Loads in progress, which Close waits for before it
	// closes the compilation cache under them.
	loads sync.WaitGroup
}

// NewEngine returns an Engine with the given options.
func NewEngine(ctx context.Context, opts Options) (*Engine, error) {
	cache := wazero.NewCompilationCache()
	if opts.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("open compilation cache %q: %w: pick a writable directory", opts.CacheDir, err)
		}
		cache = c
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	workers := opts.CompileWorkers
	if workers <= 0 {
		workers = goruntime.GOMAXPROCS(0)
	}
	calls := opts.GuestCalls
	if calls <= 0 {
		calls = goruntime.GOMAXPROCS(0)
	}
	return &Engine{
		cache:     cache,
		logger:    logger,
		workers:   workers,
		gate:      newGate(calls),
		validator: newValidator(ctx),
		modules:   map[closer]struct{}{},
	}, nil
}

// Close closes every module the Engine loaded (see Module.Close; ctx bounds
// how long calls in flight may still run) and then the compilation cache.
// Load after Close fails with ErrClosed.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.loads.Wait() // a Load that finishes now sees closed and cleans up

	e.mu.Lock()
	mods := make([]closer, 0, len(e.modules))
	for m := range e.modules {
		mods = append(mods, m)
	}
	e.mu.Unlock()

	// Close modules concurrently so that one slow call does not hold up the
	// others' draining.
	var wg sync.WaitGroup
	errs := make([]error, len(mods))
	for i, m := range mods {
		wg.Go(func() { errs[i] = m.Close(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if err := e.validator.Close(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("close validator: %w", err)
	}
	if err := e.cache.Close(ctx); err != nil {
		return fmt.Errorf("close compilation cache: %w", err)
	}
	return nil
}

// GuestCalls says how many calls into guests run and wait now, and how
// many may run at once (Options.GuestCalls).
func (e *Engine) GuestCalls() GateStats { return e.gate.stats() }

// wasmMagic starts every WebAssembly binary.
var wasmMagic = []byte("\x00asm")

// Load compiles wasm (through the shared compilation cache), validates it
// against the ABI, starts one instance, reads and validates its manifest, and
// returns the module ready to serve calls. source says where the bytes came
// from (a file path); it appears in every error. A zero field of limits takes
// its default.
//
// Errors wrap ErrNotModule, ErrABIVersion, ErrMissingExport,
// ErrForbiddenImport, ErrManifest, ErrStart, ErrLimits or ErrClosed.
func (e *Engine) Load(ctx context.Context, source string, wasm []byte, limits Limits) (*Module, error) {
	limits, err := e.beginLoad(source, limits)
	if err != nil {
		return nil, err
	}
	defer e.loads.Done()
	if !bytes.HasPrefix(wasm, wasmMagic) {
		return nil, loadError(source, ErrNotModule, "it does not start with the WebAssembly magic bytes: point the module at a .wasm file")
	}

	sum := sha256.Sum256(wasm)
	m := newModule(e, source, limits, Info{Source: source, Size: len(wasm), SHA256: hex.EncodeToString(sum[:]), Profile: nativeInfo}, sum)
	if err := m.load(ctx, wasm); err != nil {
		if m.runtime != nil {
			_ = m.release(context.WithoutCancel(ctx))
		}
		return nil, err
	}

	if err := e.register(ctx, source, &m.base, m.release); err != nil {
		return nil, err
	}
	return m, nil
}

// beginLoad checks limits and counts a load in progress, which Close waits
// for (the caller calls e.loads.Done when it ends), or fails once the
// Engine is closed. It returns limits with the defaults filled in.
func (e *Engine) beginLoad(source string, limits Limits) (Limits, error) {
	if err := limits.Validate(); err != nil {
		return limits, fmt.Errorf("load module %q: %w", source, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return limits, fmt.Errorf("load module %q: engine %w", source, ErrClosed)
	}
	e.loads.Add(1)
	return limits.withDefaults(), nil
}

// register adds a loaded module to those Close closes, or releases it and
// fails if Close came first.
func (e *Engine) register(ctx context.Context, source string, m closer, release func(context.Context) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		_ = release(context.WithoutCancel(ctx))
		return fmt.Errorf("load module %q: engine %w", source, ErrClosed)
	}
	e.modules[m] = struct{}{}
	return nil
}

// closer is a loaded module of either kind, as the Engine closes it.
type closer interface {
	Close(ctx context.Context) error
}

// forget drops a closed module from the engine.
func (e *Engine) forget(m closer) {
	e.mu.Lock()
	delete(e.modules, m)
	e.mu.Unlock()
}
