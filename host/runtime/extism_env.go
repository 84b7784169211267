package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"math"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"
)

// extismGuardedEnv is the import module ExtismEnv is renamed to in every
// plugin the runtime loads (instrument's rename). go-sdk registers the
// kernel's functions under ExtismEnv itself, with no bound on what they
// read: its log functions copy the whole block the guest names, whatever
// its size, before anything could look at it. The renamed imports reach
// the functions below instead, each guarded (guardHostCall) and each
// reading at most its bound from guest memory; they delegate to the
// plugin's kernel as go-sdk's do (RATIONALE.md, "Why does the host
// provide the Extism kernel functions itself?").
const extismGuardedEnv = "kubeplug:extism/env"

// envFunc is one function of extismGuardedEnv. cost, if set, returns the
// bytes the call will move (refusing a request over its bound); run, if
// set, implements the function, otherwise the kernel's export of the same
// name does.
type envFunc struct {
	name            string
	params, results []extism.ValueType
	cost            func(p *Plugin, ctx context.Context, name string, stack []uint64) uint64
	run             func(p *Plugin, ctx context.Context, cp *extism.CurrentPlugin, stack []uint64)
	// small: the function does a fixed amount of work of at most 8 bytes
	// whatever the plugin asks, so its guard reads the clock only every
	// clockEvery-th small call (see smallCallSkipsClock).
	small bool
}

var (
	i64s = []extism.ValueType{extism.ValueTypeI64}
	i32s = []extism.ValueType{extism.ValueTypeI32}
)

// extismEnvFuncs are the functions a plugin may import from ExtismEnv
// (SPEC.md, "The Extism profile"); the rest are refused at load.
var extismEnvFuncs = []envFunc{
	{name: "alloc", params: i64s, results: i64s, cost: allocCost},
	{name: "free", params: i64s},
	{name: "length", params: i64s, results: i64s, small: true},
	{name: "length_unsafe", params: i64s, results: i64s, small: true},
	{name: "load_u8", params: i64s, results: i32s, small: true},
	{name: "store_u8", params: []extism.ValueType{extism.ValueTypeI64, extism.ValueTypeI32}, small: true},
	{name: "input_length", results: i64s, small: true},
	{name: "input_offset", results: i64s, small: true},
	{name: "input_load_u8", params: i64s, results: i32s, small: true},
	{name: "output_set", params: []extism.ValueType{extism.ValueTypeI64, extism.ValueTypeI64}, cost: outputCost},
	{name: "error_set", params: i64s, cost: errorCost},
	{name: "load_u64", params: i64s, results: i64s, cost: fixedCost(8), run: loadU64, small: true},
	{name: "store_u64", params: []extism.ValueType{extism.ValueTypeI64, extism.ValueTypeI64}, cost: fixedCost(8), run: storeU64, small: true},
	{name: "input_load_u64", params: i64s, results: i64s, cost: fixedCost(8), run: inputLoadU64, small: true},
	{name: "get_log_level", results: i32s, run: getLogLevel, small: true},
	{name: "log_trace", params: i64s, cost: logCost, run: logAt(extism.LogLevelTrace)},
	{name: "log_debug", params: i64s, cost: logCost, run: logAt(extism.LogLevelDebug)},
	{name: "log_info", params: i64s, cost: logCost, run: logAt(extism.LogLevelInfo)},
	{name: "log_warn", params: i64s, cost: logCost, run: logAt(extism.LogLevelWarn)},
	{name: "log_error", params: i64s, cost: logCost, run: logAt(extism.LogLevelError)},
}

// extismImports are the names of extismEnvFuncs, for checkExtismImports.
var extismImports = func() map[string]bool {
	names := make(map[string]bool, len(extismEnvFuncs))
	for _, f := range extismEnvFuncs {
		names[f.name] = true
	}
	return names
}()

// envFunctions returns extismGuardedEnv's functions for p's runtime.
func (p *Plugin) envFunctions() []extism.HostFunction {
	fns := make([]extism.HostFunction, 0, len(extismEnvFuncs))
	for _, f := range extismEnvFuncs {
		hf := extism.NewHostFunctionWithStack(f.name, func(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
			checkpointDeadline(ctx) // before reading the request
			var cost uint64
			if f.cost != nil {
				cost = f.cost(p, ctx, f.name, stack)
			}
			if f.small && smallCallSkipsClock(ctx) {
				guardHostCallByTimer(ctx, p.interrupted.Load(), f.name, cost)
			} else {
				guardHostCall(ctx, p.interrupted.Load(), f.name, cost)
			}
			if f.run != nil {
				f.run(p, ctx, cp, stack)
				return
			}
			callKernel(ctx, f.name, stack)
		}, f.params, f.results)
		hf.SetNamespace(extismGuardedEnv)
		fns = append(fns, hf)
	}
	return fns
}

// callKernel calls the plugin instance's kernel function name with stack,
// as go-sdk's own env functions do, through the instance's kernelFuncs
// when its call context carries them.
func callKernel(ctx context.Context, name string, stack []uint64) {
	kernel, ok := ctx.Value(extism.PluginCtxKey("extism")).(api.Module)
	if !ok {
		panic(fmt.Errorf("%s: called outside a plugin call", name))
	}
	var fn api.Function
	if k, ok := ctx.Value(kernelFuncsKey{}).(*kernelFuncs); ok {
		fn = k.function(kernel, name)
	} else {
		fn = kernel.ExportedFunction(name)
	}
	if err := fn.CallWithStack(ctx, stack); err != nil {
		panic(err)
	}
}

// kernelFuncsKey is the context key of a plugin instance's kernelFuncs.
type kernelFuncsKey struct{}

// kernelFuncs are one plugin instance's handles on its kernel's functions,
// looked up once. wazero's ExportedFunction builds a new handle with a
// fresh call stack (10 KiB and more) on every lookup, which made each
// kernel function a plugin called through this file cost a lookup as well
// (RATIONALE.md, "Why does the host keep the Extism kernel's function
// handles?"). A handle serves one call at a time, as the instance does; the
// kernel never calls back into the host, so a handle is never re-entered.
type kernelFuncs struct {
	module api.Module
	fns    map[string]api.Function
	// smallCalls counts the instance's small calls (envFunc.small), for
	// smallCallSkipsClock.
	smallCalls uint32
}

// clockEvery is how often a small kernel call reads the clock (one in
// clockEvery). guardHostCall reads it besides the context because a late
// timer must not let a guest run on; between two reads a plugin can make
// at most clockEvery-1 calls of at most 8 bytes each, a few tens of
// microseconds, where the checkpoints let a plugin's own code run a few
// hundred between two looks at the context (RATIONALE.md, "Why do small
// Extism kernel calls read the clock only one time in 64?").
const clockEvery = 64

// smallCallSkipsClock reports whether the small call under ctx may skip
// the clock read: all but one in clockEvery of an instance's small calls,
// the first of each run of clockEvery reading it. Without the instance's
// kernelFuncs in ctx, none may.
func smallCallSkipsClock(ctx context.Context) bool {
	k, ok := ctx.Value(kernelFuncsKey{}).(*kernelFuncs)
	if !ok {
		return false
	}
	k.smallCalls++
	return k.smallCalls%clockEvery != 1
}

// function returns kernel's function name, from the cache when kernel is
// the module the cache was filled from.
func (k *kernelFuncs) function(kernel api.Module, name string) api.Function {
	if k.module != kernel {
		k.module, k.fns = kernel, make(map[string]api.Function)
	}
	fn := k.fns[name]
	if fn == nil {
		if fn = kernel.ExportedFunction(name); fn == nil {
			panic(fmt.Errorf("%s: the Extism kernel has no such function", name))
		}
		k.fns[name] = fn
	}
	return fn
}

// blockLength returns the length of the kernel block at offset.
func blockLength(ctx context.Context, offset uint64) uint64 {
	stack := []uint64{offset}
	callKernel(ctx, "length", stack)
	return stack[0]
}

func fixedCost(n uint64) func(*Plugin, context.Context, string, []uint64) uint64 {
	return func(*Plugin, context.Context, string, []uint64) uint64 { return n }
}

// allocCost refuses a block larger than the plugin's memory cap (the
// kernel could not grow to it) and charges its size.
func allocCost(p *Plugin, _ context.Context, name string, stack []uint64) uint64 {
	if limit := uint64(p.limits.memoryPages()) * pageSize; stack[0] > limit {
		refuse(name, "a block of %d bytes, more than the plugin's %s memory limit", stack[0], humanBytes(limit))
	}
	return stack[0]
}

// outputCost refuses an output larger than Limits.MaxOutputBytes before the
// host copies it out, and charges its size.
func outputCost(p *Plugin, _ context.Context, name string, stack []uint64) uint64 {
	if n := stack[1]; n > uint64(p.limits.MaxOutputBytes) {
		refuse(name, "output of %d bytes is larger than the %s limit", n, humanBytes(uint64(p.limits.MaxOutputBytes)))
	}
	return stack[1]
}

// errorCost does for the error message what outputCost does for the output.
func errorCost(p *Plugin, ctx context.Context, name string, stack []uint64) uint64 {
	n := blockLength(ctx, stack[0])
	if n > uint64(p.limits.MaxOutputBytes) {
		refuse(name, "an error message of %d bytes is larger than the %s limit", n, humanBytes(uint64(p.limits.MaxOutputBytes)))
	}
	return n
}

// logCost charges what a log function reads: at most maxLogBytes of the
// block, whatever its length.
func logCost(_ *Plugin, ctx context.Context, _ string, stack []uint64) uint64 {
	return min(blockLength(ctx, stack[0]), maxLogBytes)
}

// logAt returns the log function of level: it logs the block at its
// offset within the call's log budget, reading no more of it than the
// budget lets it log, and frees it, as Extism's log functions do.
func logAt(level extism.LogLevel) func(*Plugin, context.Context, *extism.CurrentPlugin, []uint64) {
	return func(p *Plugin, ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
		offset := stack[0]
		if c := callOf(ctx); c != nil && offset <= math.MaxUint32 {
			if n, truncated, ok := c.log.spend(uint32(min(blockLength(ctx, offset), math.MaxUint32))); ok {
				if msg, ok := cp.Memory().Read(uint32(offset), n); ok {
					p.logMessage(level, string(msg), truncated)
				}
			}
		}
		callKernel(ctx, "free", stack)
	}
}

// logMessage logs one of the plugin's messages, already within the
// call's log budget. Unlike writeLog it passes the bytes on as they are,
// not made valid UTF-8: the admit tests read the request a plugin logs,
// MessagePack included, back from the log.
func (p *Plugin) logMessage(level extism.LogLevel, msg string, truncated bool) {
	l := slog.LevelInfo
	switch level {
	case extism.LogLevelTrace, extism.LogLevelDebug:
		l = slog.LevelDebug
	case extism.LogLevelWarn:
		l = slog.LevelWarn
	case extism.LogLevelError:
		l = slog.LevelError
	}
	if truncated {
		p.logger().LogAttrs(context.Background(), l, msg, slog.Bool("truncated", true))
		return
	}
	p.logger().LogAttrs(context.Background(), l, msg)
}

// kernelAddress is offset as an address in the kernel's memory, or a trap.
func kernelAddress(name string, offset uint64) uint32 {
	if offset > math.MaxUint32-8 {
		panic(fmt.Errorf("%s: offset %d is outside the kernel's memory", name, offset))
	}
	return uint32(offset)
}

func loadU64(_ *Plugin, _ context.Context, cp *extism.CurrentPlugin, stack []uint64) {
	v, ok := cp.Memory().ReadUint64Le(kernelAddress("load_u64", stack[0]))
	if !ok {
		panic(fmt.Errorf("load_u64: offset %d is outside the kernel's memory", stack[0]))
	}
	stack[0] = v
}

func storeU64(_ *Plugin, _ context.Context, cp *extism.CurrentPlugin, stack []uint64) {
	if !cp.Memory().WriteUint64Le(kernelAddress("store_u64", stack[0]), stack[1]) {
		panic(fmt.Errorf("store_u64: offset %d is outside the kernel's memory", stack[0]))
	}
}

func inputLoadU64(_ *Plugin, ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
	base, _ := ctx.Value(extism.InputOffsetKey("inputOffset")).(uint64)
	v, ok := cp.Memory().ReadUint64Le(kernelAddress("input_load_u64", base+stack[0]))
	if !ok {
		panic(fmt.Errorf("input_load_u64: offset %d is outside the input", stack[0]))
	}
	stack[0] = v
}

// getLogLevel answers the level go-sdk is set to (extismLogLevel).
func getLogLevel(_ *Plugin, _ context.Context, _ *extism.CurrentPlugin, stack []uint64) {
	stack[0] = api.EncodeI32(extism.LogLevelInfo.ExtismCompat())
}
