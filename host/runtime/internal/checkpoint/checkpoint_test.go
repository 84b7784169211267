package checkpoint_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/kubeplug/kubeplug/host/runtime/internal/checkpoint"
	wb "github.com/kubeplug/kubeplug/host/runtime/internal/wasmbuild"
)

var imp = checkpoint.Import{Module: "kubeplug:test", Name: "checkpoint"}

// run instantiates wasm (instrumented when interval > 0) with an env.add
// import and the checkpoint import, which counts its calls and returns
// interval; it calls export with params and returns the results and the
// checkpoint count.
func run(t *testing.T, wasm []byte, interval uint32, export string, params ...uint64) ([]uint64, int) {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { _ = r.Close(ctx) })
	_, err := r.NewHostModuleBuilder("env").
		NewFunctionBuilder().WithFunc(func(a, b uint32) uint32 { return a + b }).Export("add").
		Instantiate(ctx)
	require.NoError(t, err)
	calls := 0
	if interval > 0 {
		_, err = r.NewHostModuleBuilder(imp.Module).
			NewFunctionBuilder().WithFunc(func() uint32 { calls++; return interval }).Export(imp.Name).
			Instantiate(ctx)
		require.NoError(t, err)
		wasm, err = checkpoint.Insert(wasm, imp, interval)
		require.NoError(t, err)
	}
	mod, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(""))
	require.NoError(t, err)
	fn := mod.ExportedFunction(export)
	require.NotNil(t, fn, export)
	res, err := fn.Call(ctx, params...)
	require.NoError(t, err)
	return res, calls
}

// counter is a module whose "count" loops n times (its body starts with the
// loop, so the loop head is its only checkpoint) and whose "fanout"
// recurses twice per level without any loop: fanout(n) makes 2^(n+1)-1
// calls, each a function entry.
func counter() wb.Module {
	loop := wb.Cat(
		[]byte{wb.OpLoop, wb.BlockEmpty},
		wb.Op(wb.OpLocalGet, 1), wb.I32Const(1), []byte{wb.OpI32Add}, wb.Op(wb.OpLocalTee, 1),
		wb.Op(wb.OpLocalGet, 0), []byte{0x49}, // i32.lt_u
		wb.Op(wb.OpBrIf, 0),
		[]byte{wb.OpEnd},
		wb.Op(wb.OpLocalGet, 1),
	)
	fanout := wb.Cat(
		wb.Op(wb.OpLocalGet, 0), []byte{wb.OpI32Eqz, wb.OpIf, wb.BlockEmpty}, wb.I32Const(0), []byte{wb.OpReturn, wb.OpEnd},
		wb.Op(wb.OpLocalGet, 0), wb.I32Const(1), []byte{wb.OpI32Sub}, wb.Op(wb.OpCall, 1), []byte{wb.OpDrop},
		wb.Op(wb.OpLocalGet, 0), wb.I32Const(1), []byte{wb.OpI32Sub}, wb.Op(wb.OpCall, 1), []byte{wb.OpDrop},
		wb.I32Const(1),
	)
	return wb.Module{Funcs: []wb.Func{
		{Export: "count", Params: []byte{wb.I32}, Results: []byte{wb.I32}, Locals: []wb.Locals{{N: 1, Type: wb.I32}}, Body: loop},
		{Export: "fanout", Params: []byte{wb.I32}, Results: []byte{wb.I32}, Body: fanout},
	}}
}

// The countdown calls the checkpoint exactly once every interval+1 loop
// heads or function entries: passes that find the countdown at zero call
// it, the others decrement it.
func TestCheckpointFrequency(t *testing.T) {
	wasm := counter().Bytes()
	for _, tt := range []struct {
		name     string
		export   string
		n        uint64
		interval uint32
		passes   int
	}{
		{"loop, one pass", "count", 1, 3, 1},
		{"loop, 100 passes, interval 9", "count", 100, 9, 100},
		{"loop, 100000 passes, interval 999", "count", 100000, 999, 100000},
		{"loop, every pass", "count", 50, 1, 50},
		{"recursion without loops, depth 10", "fanout", 10, 7, 1<<11 - 1},
		{"recursion without loops, depth 16", "fanout", 16, 1000, 1<<17 - 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, _ := run(t, wasm, 0, tt.export, tt.n)
			got, calls := run(t, wasm, tt.interval, tt.export, tt.n)
			require.Equal(t, want, got, "instrumented code must compute the same result")
			require.Equal(t, tt.passes/(int(tt.interval)+1), calls)
		})
	}
}

// Every way a module refers to a function by index still reaches the same
// function after the checkpoint import takes index 1: calls, call_indirect
// through an element segment, ref.func in a global initializer, exports and
// the start function.
func TestInsertRenumbersFunctions(t *testing.T) {
	const (
		add     = 0 // env.add, imported
		seven   = 1
		twice   = 2 // calls add(x, x)
		viaTab  = 3 // call_indirect table[x]
		started = 4 // the start function: sets global 0 to 42
	)
	m := wb.Module{
		Imports: []wb.Import{{Module: "env", Name: "add", Params: []byte{wb.I32, wb.I32}, Results: []byte{wb.I32}}},
		Globals: []wb.Global{
			{Type: wb.I32, Mutable: true, Init: wb.I32Const(0)},
			{Type: 0x70, Init: wb.Op(wb.OpRefFunc, twice)}, // funcref
		},
		Table: []uint32{seven, twice},
		Start: ptr(uint32(started)),
		Names: true,
	}
	m.Funcs = []wb.Func{
		{Export: "seven", Results: []byte{wb.I32}, Body: wb.I32Const(7)},
		{Export: "twice", Params: []byte{wb.I32}, Results: []byte{wb.I32}, Body: wb.Cat(wb.Op(wb.OpLocalGet, 0), wb.Op(wb.OpLocalGet, 0), wb.Op(wb.OpCall, add))},
		{Export: "via_table", Params: []byte{wb.I32}, Results: []byte{wb.I32}, Body: wb.Cat(
			wb.I32Const(5), wb.Op(wb.OpLocalGet, 0), wb.Op(wb.OpCallIndirect, m.FuncType(twice-1)), []byte{0x00}), // type of twice; table 0
		},
		{Body: wb.Cat(wb.I32Const(42), wb.Op(wb.OpGlobalSet, 0))},
		{Export: "started", Results: []byte{wb.I32}, Body: wb.Op(wb.OpGlobalGet, 0)},
	}
	wasm := m.Bytes()
	for _, tt := range []struct {
		export string
		params []uint64
		want   uint64
	}{
		{"seven", nil, 7},
		{"twice", []uint64{21}, 42},
		{"via_table", []uint64{1}, 10}, // table[1] is twice(5)
		{"started", nil, 42},
	} {
		want, _ := run(t, wasm, 0, tt.export, tt.params...)
		require.Equal(t, []uint64{tt.want}, want, "the test module itself")
		got, _ := run(t, wasm, 1, tt.export, tt.params...)
		require.Equal(t, want, got, tt.export)
	}
}

func ptr[T any](v T) *T { return &v }

// A trap's stack trace names the functions as the module named them.
func TestInsertKeepsFunctionNames(t *testing.T) {
	m := wb.Module{
		Imports: []wb.Import{{Module: "env", Name: "add", Params: []byte{wb.I32, wb.I32}, Results: []byte{wb.I32}}},
		Funcs: []wb.Func{
			{Export: "outer", Body: wb.Op(wb.OpCall, 2)},
			{Body: []byte{wb.OpUnreachable}}, // f2
		},
		Names: true,
	}
	wasm, err := checkpoint.Insert(m.Bytes(), imp, 1000)
	require.NoError(t, err)
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	_, err = r.NewHostModuleBuilder("env").NewFunctionBuilder().WithFunc(func(a, b uint32) uint32 { return a + b }).Export("add").Instantiate(ctx)
	require.NoError(t, err)
	_, err = r.NewHostModuleBuilder(imp.Module).NewFunctionBuilder().WithFunc(func() uint32 { return 1000 }).Export(imp.Name).Instantiate(ctx)
	require.NoError(t, err)
	compiled, err := r.CompileModule(ctx, wasm)
	require.NoError(t, err)
	var names []string
	for _, def := range compiled.ImportedFunctions() {
		names = append(names, def.Name())
	}
	require.Equal(t, []string{"env.add", imp.Module + "." + imp.Name}, names)
	mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig())
	require.NoError(t, err)
	_, err = mod.ExportedFunction("outer").Call(ctx)
	require.ErrorContains(t, err, "unreachable")
	require.Contains(t, err.Error(), ".f2()")
	require.Contains(t, err.Error(), ".f1()")
}

func TestInsertDropsCodeOffsetSections(t *testing.T) {
	m := counter()
	m.Custom = []wb.Custom{{Name: ".debug_info", Bytes: []byte{1, 2, 3}}, {Name: "producers", Bytes: []byte{0}}, {Name: "sourceMappingURL", Bytes: []byte{0}}}
	wasm, err := checkpoint.Insert(m.Bytes(), imp, 10)
	require.NoError(t, err)
	require.NotContains(t, string(wasm), ".debug_info")
	require.NotContains(t, string(wasm), "sourceMappingURL")
	require.Contains(t, string(wasm), "producers")
}

// A module with no imports, types or globals gets the sections it needs, in
// the order the binary format requires.
func TestInsertIntoEmptyModule(t *testing.T) {
	wasm, err := checkpoint.Insert([]byte("\x00asm\x01\x00\x00\x00"), imp, 10)
	require.NoError(t, err)
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	compiled, err := r.CompileModule(ctx, wasm)
	require.NoError(t, err)
	require.Len(t, compiled.ImportedFunctions(), 1)
	require.Equal(t, []api.ValueType{api.ValueTypeI32}, compiled.ImportedFunctions()[0].ResultTypes())
}

func TestInsertErrors(t *testing.T) {
	good := counter().Bytes()
	for _, tt := range []struct {
		name string
		wasm []byte
		err  error
		msg  string
	}{
		{"not wasm", []byte("kind: Pod"), checkpoint.ErrMalformed, "no WebAssembly magic bytes"},
		{"component", []byte("\x00asm\x0d\x00\x01\x00"), checkpoint.ErrUnsupported, "a component, not a core module"},
		{"truncated", good[:len(good)-3], checkpoint.ErrMalformed, "run past the end"},
		{"unknown section", append([]byte("\x00asm\x01\x00\x00\x00"), 42, 0), checkpoint.ErrMalformed, "unknown section id 42"},
		{
			"exception handling",
			wb.Module{Funcs: []wb.Func{{Body: []byte{0x06, wb.BlockEmpty, wb.OpEnd}}}}.Bytes(),
			checkpoint.ErrUnsupported, "code of function 0 at byte",
		},
		{
			"reserved import",
			wb.Module{Imports: []wb.Import{{Module: imp.Module, Name: "anything"}}}.Bytes(),
			checkpoint.ErrReservedImport, `imports kubeplug:test.anything, and "kubeplug:test" is reserved`,
		},
		{
			"body ends early",
			wb.Module{Funcs: []wb.Func{{Body: []byte{wb.OpBlock, wb.BlockEmpty}}}}.Bytes(), // the final end closes the block
			checkpoint.ErrMalformed, "unexpected end",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkpoint.Insert(tt.wasm, imp, 10)
			require.ErrorIs(t, err, tt.err)
			require.ErrorContains(t, err, tt.msg)
		})
	}
}

// Guest code can never name what the rewrite adds: an index one past the
// module's own (the index the countdown, the checkpoint import or its type
// would take) is refused wherever the binary format allows an index, even
// in a module no validator has seen.
func TestInsertRefusesIndicesBeyondTheModule(t *testing.T) {
	one := []wb.Func{{Export: "f", Body: []byte{wb.OpNop}}}
	for _, tt := range []struct {
		name string
		m    wb.Module
		want string
	}{
		{"global.set of the countdown's index", wb.Module{
			Globals: []wb.Global{{Type: wb.I32, Mutable: true, Init: wb.I32Const(0)}},
			Funcs:   []wb.Func{{Body: wb.Cat(wb.I32Const(1), wb.Op(wb.OpGlobalSet, 1))}},
		}, "global index 1 is out of range: the module has 1"},
		{"global.get of the countdown's index", wb.Module{
			Funcs: []wb.Func{{Body: wb.Cat(wb.Op(wb.OpGlobalGet, 0), []byte{wb.OpDrop})}},
		}, "global index 0 is out of range: the module has 0"},
		{"call of the checkpoint's index", wb.Module{
			Funcs: []wb.Func{{Body: wb.Op(wb.OpCall, 1)}},
		}, "function index 1 is out of range: the module has 1"},
		{"ref.func in a global initializer", wb.Module{
			Globals: []wb.Global{{Type: 0x70, Init: wb.Op(wb.OpRefFunc, 5)}},
			Funcs:   one,
		}, "function index 5 is out of range"},
		{"call_indirect of the checkpoint's type", wb.Module{
			Table: []uint32{0},
			Funcs: []wb.Func{{Body: wb.Cat(wb.I32Const(0), wb.Op(wb.OpCallIndirect, 1), []byte{0})}},
		}, "type index 1 is out of range: the module has 1"},
		{"a block of the checkpoint's type", wb.Module{
			Funcs: []wb.Func{{Body: []byte{wb.OpBlock, 1, wb.OpEnd}}},
		}, "type index 1 is out of range"},
		{"a loop of the checkpoint's type", wb.Module{
			Funcs: []wb.Func{{Body: []byte{wb.OpLoop, 1, wb.OpEnd}}},
		}, "type index 1 is out of range"},
		{"global.set in _initialize", wb.Module{
			Funcs: []wb.Func{{Export: "_initialize", Body: wb.Cat([]byte{wb.OpLoop, wb.BlockEmpty}, wb.I32Const(99), wb.Op(wb.OpGlobalSet, 0), wb.Op(wb.OpBr, 0), []byte{wb.OpEnd})}},
		}, "global index 0 is out of range"},
		{"start function beyond the module", wb.Module{Funcs: one, Start: ptr(uint32(1))}, "function index 1 is out of range"},
		{"element segment beyond the module", wb.Module{Funcs: one, Table: []uint32{1}}, "function index 1 is out of range"},
		{"a module within its own indices (control)", wb.Module{
			Funcs: one,
			Data:  []wb.Data{{Offset: 0, Bytes: []byte{1}}},
		}, ""}, // control: valid
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkpoint.Insert(tt.m.Bytes(), imp, 10)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, checkpoint.ErrMalformed)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// A bulk instruction costs its length: a loop whose every pass fills 64 KiB
// calls the checkpoint on every pass, where counting only its loop head
// would call it once every interval passes.
func TestInsertChargesBulkInstructions(t *testing.T) {
	const passes = 50
	args := wb.Cat(wb.I32Const(0), wb.I32Const(7), wb.I32Const(64<<10)) // dst, value or src, length
	for _, tt := range []struct {
		name string
		op   []byte
	}{
		{"memory.fill", []byte{0xfc, 11, 0}},
		{"memory.copy", []byte{0xfc, 10, 0, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			loop := wb.Cat(
				[]byte{wb.OpLoop, wb.BlockEmpty},
				args, tt.op,
				wb.Op(wb.OpLocalGet, 0), wb.I32Const(1), []byte{wb.OpI32Sub}, wb.Op(wb.OpLocalTee, 0),
				wb.Op(wb.OpBrIf, 0),
				[]byte{wb.OpEnd},
				wb.I32Const(0), []byte{0x2d, 0, 0}, // i32.load8_u of byte 0: what the fill wrote
			)
			m := wb.Module{Funcs: []wb.Func{{Export: "run", Params: []byte{wb.I32}, Results: []byte{wb.I32}, Body: loop}}}
			m.MemoryPages = 2
			want, _ := run(t, m.Bytes(), 0, "run", passes)
			got, calls := run(t, m.Bytes(), 1000, "run", passes)
			require.Equal(t, want, got, "instrumented code must compute the same result")
			require.GreaterOrEqual(t, calls, passes, "every 64 KiB pass costs more than an interval")
		})
	}
}

// Tables are capped in all: a module whose tables start beyond the cap is
// refused, and table.grow fails (returns -1) rather than pass it.
func TestInsertCapsTables(t *testing.T) {
	grow := wb.Func{Export: "grow", Params: []byte{wb.I32}, Results: []byte{wb.I32}, Body: wb.Cat(
		[]byte{0xd0, 0x70}, wb.Op(wb.OpLocalGet, 0), []byte{0xfc, 15, 0}), // table.grow 0 (ref.null func, n)
	}
	limits := checkpoint.Limits{TableElements: 100}
	t.Run("grow within and beyond", func(t *testing.T) {
		m := wb.Module{Tables: []wb.Table{{Min: 10}}, Funcs: []wb.Func{grow}}
		wasm, err := checkpoint.InsertWithLimits(m.Bytes(), imp, 1000, limits)
		require.NoError(t, err)
		require.Equal(t, []uint64{uint64(uint32(0xffffffff))}, call(t, wasm, "grow", 1<<31), "table.grow by 2^31")
		require.Equal(t, []uint64{uint64(uint32(0xffffffff))}, call(t, wasm, "grow", 91), "one past the cap")
		require.Equal(t, []uint64{10}, call(t, wasm, "grow", 90), "up to the cap")
	})
	for _, tt := range []struct {
		name string
		m    wb.Module
		want string
	}{
		{"one huge table", wb.Module{Tables: []wb.Table{{Min: 100_000_000}}}, "table of 100000000 elements exceeds the limit of 100"},
		{"eight large tables", wb.Module{Tables: []wb.Table{{Min: 20}, {Min: 20}, {Min: 20}, {Min: 20}, {Min: 20}, {Min: 20}, {Min: 20}, {Min: 20}}}, "8 tables of 160 elements in all exceed the limit of 100"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkpoint.InsertWithLimits(tt.m.Bytes(), imp, 1000, limits)
			require.ErrorIs(t, err, checkpoint.ErrTableLimit)
			require.ErrorContains(t, err, tt.want)
		})
	}
	t.Run("the room goes to the tables in order, within their declared maximums", func(t *testing.T) {
		m := wb.Module{Tables: []wb.Table{{Min: 10, Max: ptr(uint32(30))}, {Min: 10}}, Funcs: []wb.Func{grow, {
			Export: "grow1", Params: []byte{wb.I32}, Results: []byte{wb.I32}, Body: wb.Cat([]byte{0xd0, 0x70}, wb.Op(wb.OpLocalGet, 0), []byte{0xfc, 15, 1}),
		}}}
		wasm, err := checkpoint.InsertWithLimits(m.Bytes(), imp, 1000, limits)
		require.NoError(t, err)
		require.Equal(t, []uint64{uint64(uint32(0xffffffff))}, call(t, wasm, "grow", 21), "table 0 keeps its maximum of 30")
		require.Equal(t, []uint64{uint64(uint32(0xffffffff))}, call(t, wasm, "grow1", 61), "table 1 gets the rest: 100-30-10")
		require.Equal(t, []uint64{10}, call(t, wasm, "grow1", 60))
	})
}

// call instantiates an already instrumented module and calls export.
func call(t *testing.T, wasm []byte, export string, params ...uint64) []uint64 {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { _ = r.Close(ctx) })
	_, err := r.NewHostModuleBuilder(imp.Module).NewFunctionBuilder().WithFunc(func() uint32 { return 1000 }).Export(imp.Name).Instantiate(ctx)
	require.NoError(t, err)
	mod, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(""))
	require.NoError(t, err)
	res, err := mod.ExportedFunction(export).Call(ctx, params...)
	require.NoError(t, err)
	return res
}

// A loop whose body is one long straight stretch passes a counted check
// every MaxStretch instructions, not once per pass: with branches that jump
// over code, too, since a branch carries its count to where it lands.
func TestInsertChecksLongStretches(t *testing.T) {
	const passes, interval = 50, 9
	for _, tt := range []struct {
		name    string
		k, skip int
		run     int // instructions run per pass, at least
	}{
		{"straight", 2000, 0, 4 * 2000},
		{"branches over code", 400, 80, (4 + 2 + 1) * 400}, // block, the step, br, end
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := wb.Module{Funcs: []wb.Func{{Export: "run", Params: []byte{wb.I32}, Results: []byte{wb.I32},
				Locals: []wb.Locals{{N: 1, Type: wb.I32}}, Body: checkpoint.StretchLoop(tt.k, tt.skip)}}}
			want, _ := run(t, m.Bytes(), 0, "run", passes)
			require.Equal(t, []uint64{passes * uint64(tt.k)}, want, "the test module itself")
			got, calls := run(t, m.Bytes(), interval, "run", passes)
			require.Equal(t, want, got, "instrumented code must compute the same result")
			// A check every MaxStretch+1 instructions at most (a branch's
			// count includes the end it lands after).
			checks := passes * (tt.run / (checkpoint.MaxStretch + 1))
			require.GreaterOrEqual(t, calls, checks/(interval+1), "counted checks: at least one per stretch")
			require.Greater(t, calls, 10*passes/(interval+1), "ten times what the loop heads alone count")
		})
	}
}

// Checks inserted in code that runs on no path (after br, return and
// unreachable, where the operand stack is polymorphic) keep the module
// valid, and the code that runs computes what it did.
func TestInsertChecksInUnreachableCode(t *testing.T) {
	adds := bytes.Repeat([]byte{wb.OpI32Add}, 2*checkpoint.MaxStretch) // pops from an empty, polymorphic stack
	body := wb.Cat(
		[]byte{wb.OpBlock, wb.I32}, wb.I32Const(1), wb.Op(wb.OpBr, 0), adds, []byte{wb.OpEnd}, // 1
		[]byte{wb.OpBlock, wb.I32}, wb.Op(wb.OpLocalGet, 0), []byte{wb.OpIf, wb.BlockEmpty, wb.OpUnreachable}, adds, []byte{wb.OpDrop, wb.OpEnd},
		wb.I32Const(2), []byte{wb.OpEnd}, // 2
		[]byte{wb.OpI32Add, wb.OpReturn}, adds, []byte{wb.OpDrop}, wb.I32Const(7),
	)
	m := wb.Module{Funcs: []wb.Func{{Export: "run", Params: []byte{wb.I32}, Results: []byte{wb.I32}, Body: body}}}
	want, _ := run(t, m.Bytes(), 0, "run", 0)
	require.Equal(t, []uint64{3}, want, "the test module itself")
	got, _ := run(t, m.Bytes(), 1000, "run", 0)
	require.Equal(t, want, got)
}
