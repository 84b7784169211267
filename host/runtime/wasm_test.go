package runtime_test

import (
	"github.com/kubeplug/kubeplug/abi"
)

// A tiny WebAssembly encoder, so that tests can build modules the Go
// toolchain would never produce: two version markers, wrong signatures, a
// real `unreachable`, a guest with no Go runtime at all.

const (
	tI32 byte = 0x7f
	tI64 byte = 0x7e

	opUnreachable byte = 0x00
	opLoop        byte = 0x03
	opBr          byte = 0x0c
	opEnd         byte = 0x0b
	opI32Const    byte = 0x41
	opI64Const    byte = 0x42
)

type wasmFunc struct {
	export          string // "" leaves it unexported
	params, results []byte
	body            []byte // instructions, without the final end
}

type wasmImport struct {
	module, name    string
	params, results []byte
	memory          bool // import a memory instead of a function
}

type wasmData struct {
	offset uint32
	bytes  []byte
}

type wasmModule struct {
	imports  []wasmImport
	funcs    []wasmFunc
	noMemory bool // define and export no memory
	data     []wasmData
}

func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// sleb encodes v as a signed LEB128, as i32.const and i64.const take it.
func sleb(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func wasmName(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func wasmVec(items [][]byte) []byte {
	b := uleb(uint64(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func section(id byte, content []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(content)))...), content...)
}

func funcType(params, results []byte) []byte {
	b := append([]byte{0x60}, uleb(uint64(len(params)))...)
	b = append(b, params...)
	b = append(b, uleb(uint64(len(results)))...)
	return append(b, results...)
}

func (m wasmModule) bytes() []byte {
	var types, imports, funcs, exports, codes [][]byte
	nImported := 0
	for _, im := range m.imports {
		entry := append(wasmName(im.module), wasmName(im.name)...)
		if im.memory {
			entry = append(entry, 0x02, 0x00, 0x01)
		} else {
			entry = append(entry, 0x00)
			entry = append(entry, uleb(uint64(len(types)))...)
			types = append(types, funcType(im.params, im.results))
			nImported++
		}
		imports = append(imports, entry)
	}
	for i, f := range m.funcs {
		funcs = append(funcs, uleb(uint64(len(types))))
		types = append(types, funcType(f.params, f.results))
		if f.export != "" {
			exports = append(exports, append(append(wasmName(f.export), 0x00), uleb(uint64(nImported+i))...))
		}
		body := append([]byte{0x00}, f.body...) // no locals
		body = append(body, opEnd)
		codes = append(codes, append(uleb(uint64(len(body))), body...))
	}
	if !m.noMemory {
		exports = append(exports, append(wasmName("memory"), 0x02, 0x00))
	}

	out := []byte("\x00asm\x01\x00\x00\x00")
	out = append(out, section(1, wasmVec(types))...)
	if len(imports) > 0 {
		out = append(out, section(2, wasmVec(imports))...)
	}
	out = append(out, section(3, wasmVec(funcs))...)
	if !m.noMemory {
		out = append(out, section(5, wasmVec([][]byte{{0x00, 0x01}}))...) // one page
	}
	out = append(out, section(7, wasmVec(exports))...)
	out = append(out, section(10, wasmVec(codes))...)
	if len(m.data) > 0 {
		var segs [][]byte
		for _, d := range m.data {
			seg := append([]byte{0x00, opI32Const}, sleb(int64(d.offset))...)
			seg = append(seg, opEnd)
			seg = append(seg, uleb(uint64(len(d.bytes)))...)
			segs = append(segs, append(seg, d.bytes...))
		}
		out = append(out, section(11, wasmVec(segs))...)
	}
	return out
}

func i32Const(v int32) []byte  { return append([]byte{opI32Const}, sleb(int64(v))...) }
func i64Const(v uint64) []byte { return append([]byte{opI64Const}, sleb(int64(v))...) }

// Memory layout of rawGuest's single 64 KiB page.
const (
	rawManifestAt = 1024
	rawResponseAt = 8192
	rawInputAt    = 16384 // kubeplug_malloc always returns this
)

// rawManifest is the raw guest's manifest; tests vary it.
func rawManifest() *abi.Manifest {
	return &abi.Manifest{
		Name: "raw", Version: "0.0.1", ABIVersion: abi.Current.String(),
		Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile},
	}
}

func encode(m interface{ MarshalMsg([]byte) ([]byte, error) }) []byte {
	b, err := m.MarshalMsg(nil)
	if err != nil {
		panic(err)
	}
	return b
}

// rawGuest is a complete guest with no language runtime: its manifest and its
// one answer (an empty result) sit in data segments. It measures the host's
// own cost of a call, and with reconcile set it misbehaves at the wasm level.
func rawGuest(reconcile []byte) wasmModule { return rawGuestWith(encode(rawManifest()), reconcile) }

// rawGuestWith is rawGuest with the given encoded manifest.
func rawGuestWith(manifest, reconcile []byte) wasmModule {
	resp := encode(&abi.Response{Result: &abi.Result{}})
	if reconcile == nil {
		reconcile = i64Const(abi.PackPtrLen(rawResponseAt, uint32(len(resp))))
	}
	return wasmModule{
		funcs: []wasmFunc{
			{export: abi.ExportInitialize},
			{export: abi.VersionExport},
			{export: abi.ExportMalloc, params: []byte{tI32}, results: []byte{tI32}, body: i32Const(rawInputAt)},
			{export: abi.ExportManifest, results: []byte{tI64}, body: i64Const(abi.PackPtrLen(rawManifestAt, uint32(len(manifest))))},
			{export: abi.ExportReconcile, params: []byte{tI32, tI32}, results: []byte{tI64}, body: reconcile},
		},
		data: []wasmData{{rawManifestAt, manifest}, {rawResponseAt, resp}},
	}
}

// infiniteLoop is a function body that never returns: loop br 0 end, then
// unreachable to satisfy the result type.
var infiniteLoop = []byte{opLoop, 0x40, opBr, 0x00, opEnd, opUnreachable}
