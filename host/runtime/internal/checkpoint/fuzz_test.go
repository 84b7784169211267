package checkpoint_test

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/kubeplug/kubeplug/host/runtime/internal/checkpoint"
	wb "github.com/kubeplug/kubeplug/host/runtime/internal/wasmbuild"
)

// FuzzInsert: no input panics Insert, a module Insert accepts is one wazero
// can decode without running out of memory, and the rewrite of a module
// wazero accepts (with its tables capped or not) is one wazero accepts too.
//
// It compiles with wazero's interpreter, which decodes and validates like
// the compiler: the compiler maps executable memory for every module and
// releases it only on finalization, which a fuzzer outruns (the process
// dies at the kernel's limit on mappings). The other tests run the
// compiler.
//
//	go test -fuzz FuzzInsert ./runtime/internal/checkpoint
func FuzzInsert(f *testing.F) {
	f.Add(counter().Bytes())
	f.Add(wb.Module{Names: true, Table: []uint32{0}, Funcs: []wb.Func{{Body: wb.Cat(wb.I32Const(1), []byte{wb.OpDrop})}}}.Bytes())
	f.Add(wb.Module{Tables: []wb.Table{{Min: 10}, {Min: 5, Max: ptr(uint32(2000))}}, Funcs: []wb.Func{{Body: wb.Cat(wb.I32Const(0), wb.I32Const(0), wb.I32Const(64), []byte{0xfc, 11, 0})}}}.Bytes())
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	for _, skip := range []int{0, 70} { // stretches long enough for checks of their own, in code that runs and not
		f.Add(wb.Module{Funcs: []wb.Func{{Export: "run", Params: []byte{wb.I32}, Results: []byte{wb.I32},
			Locals: []wb.Locals{{N: 1, Type: wb.I32}}, Body: checkpoint.StretchLoop(100, skip)}}}.Bytes())
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := checkpoint.Insert(wasm, imp, 100)
		if err != nil {
			return // refused before any decoder allocates
		}
		before, errBefore := r.CompileModule(ctx, wasm)
		if errBefore != nil {
			return
		}
		_ = before.Close(ctx)
		// The rewrite, and the rewrite with its tables capped, of a module
		// wazero accepts are modules wazero accepts.
		capped, err := checkpoint.InsertWithLimits(wasm, imp, 100, checkpoint.Limits{TableElements: 1000})
		for _, rewritten := range [][]byte{out, capped} {
			if rewritten == nil {
				continue // over the table limit: refused, as it should be
			}
			after, errAfter := r.CompileModule(ctx, rewritten)
			if errAfter != nil {
				t.Fatalf("wazero accepts the module but not its rewrite: %v (table limit error: %v)", errAfter, err)
			}
			_ = after.Close(ctx)
		}
	})
}
