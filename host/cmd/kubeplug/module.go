package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/kubeplug/kubeplug/host/internal/input"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// loadedModule is a module file loaded into an engine of its own.
type loadedModule struct {
	engine *runtime.Engine
	module runtime.Loaded // a native module or an Extism plugin
}

// close releases the engine and its module.
func (l *loadedModule) close(ctx context.Context) {
	if l.engine != nil {
		_ = l.engine.Close(context.WithoutCancel(ctx))
	}
}

// loadModule reads and loads the module file at path, with limits (zero
// fields take the runtime's defaults). A file that cannot be
// read is an input error; a load failure is returned as the runtime reports
// it, for the caller to classify with describeLoadError.
func loadModule(ctx context.Context, opts *globalOptions, log *slog.Logger, path string, limits runtime.Limits) (*loadedModule, error) {
	wasm, err := input.ReadFile(path, input.MaxModuleBytes, "module file")
	if err != nil {
		return nil, inputErrorf("cannot read module: %w", err)
	}
	return loadWasm(ctx, opts, log, path, wasm, limits)
}

// loadWasm is loadModule for bytes read already, which path names.
func loadWasm(ctx context.Context, opts *globalOptions, log *slog.Logger, path string, wasm []byte, limits runtime.Limits) (*loadedModule, error) {
	dir, err := opts.cacheDir.writableDir()
	if err != nil {
		return nil, err
	}
	engine, err := runtime.NewEngine(ctx, runtime.Options{CacheDir: dir, Logger: log})
	if err != nil {
		return nil, inputErrorf("%w: or pass --cache-dir=\"\" to keep compiled modules in memory", err)
	}
	l := &loadedModule{engine: engine}
	l.module, err = engine.LoadAny(ctx, path, wasm, limits)
	if err != nil {
		l.close(ctx)
		return nil, err
	}
	return l, nil
}

// loadInputModule is loadModule for commands whose module is one of their
// inputs (test, harness): every way it can fail is unusable input.
func loadInputModule(ctx context.Context, opts *globalOptions, s streams, path string, limits runtime.Limits) (*loadedModule, error) {
	return loadInput(ctx, opts, s, path, nil, limits)
}

// loadInput is loadInputModule for the bytes wasm when they are not nil
// (read already, e.g. from a registry), path then naming them.
func loadInput(ctx context.Context, opts *globalOptions, s streams, path string, wasm []byte, limits runtime.Limits) (*loadedModule, error) {
	log, err := opts.logger(s.err)
	if err != nil {
		return nil, err
	}
	var l *loadedModule
	if wasm == nil {
		l, err = loadModule(ctx, opts, log, path, limits)
	} else {
		l, err = loadWasm(ctx, opts, log, path, wasm, limits)
	}
	if err != nil {
		if exitCode(err) == exitInput {
			return nil, err
		}
		return nil, inputError(describeLoadError(path, err))
	}
	return l, nil
}

// describeLoadError says which way a module file is unusable, ahead of the
// runtime's own explanation.
func describeLoadError(path string, err error) error {
	switch {
	case errors.Is(err, runtime.ErrABIVersion):
		return fmt.Errorf("%s was built for an unsupported kubeplug ABI: %w", path, err)
	case errors.Is(err, runtime.ErrNotModule), errors.Is(err, runtime.ErrMissingExport),
		errors.Is(err, runtime.ErrForbiddenImport), errors.Is(err, runtime.ErrManifest),
		errors.Is(err, runtime.ErrStart):
		return fmt.Errorf("%s is not a usable kubeplug module: %w", path, err)
	}
	return fmt.Errorf("%s: %w", path, err)
}
