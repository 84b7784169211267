// Package wasmbuild is a tiny WebAssembly encoder for tests: it builds
// modules the Go toolchain would never produce (two version markers, wrong
// signatures, a real `unreachable`, a guest with no language runtime, a
// recursion without loops). Tests only; it checks nothing it is given.
package wasmbuild

import "strconv"

// Value types.
const (
	I32 byte = 0x7f
	I64 byte = 0x7e
)

// Opcodes the tests use by name.
const (
	OpUnreachable  byte = 0x00
	OpNop          byte = 0x01
	OpBlock        byte = 0x02
	OpLoop         byte = 0x03
	OpIf           byte = 0x04
	OpElse         byte = 0x05
	OpEnd          byte = 0x0b
	OpBr           byte = 0x0c
	OpBrIf         byte = 0x0d
	OpReturn       byte = 0x0f
	OpCall         byte = 0x10
	OpCallIndirect byte = 0x11
	OpDrop         byte = 0x1a
	OpLocalGet     byte = 0x20
	OpLocalSet     byte = 0x21
	OpLocalTee     byte = 0x22
	OpGlobalGet    byte = 0x23
	OpGlobalSet    byte = 0x24
	OpI32Const     byte = 0x41
	OpI64Const     byte = 0x42
	OpI32Eqz       byte = 0x45
	OpI32Add       byte = 0x6a
	OpI32Sub       byte = 0x6b
	OpRefFunc      byte = 0xd2
	BlockEmpty     byte = 0x40
)

// Func is a function the module defines.
type Func struct {
	Export          string // "" leaves it unexported
	Params, Results []byte
	Locals          []Locals
	Body            []byte // instructions, without the final end
}

// Locals declares N local variables of one type.
type Locals struct {
	N    uint32
	Type byte
}

// Import is an imported function, or with Memory set an imported memory.
type Import struct {
	Module, Name    string
	Params, Results []byte
	Memory          bool
}

// Data is an active data segment of memory 0.
type Data struct {
	Offset uint32
	Bytes  []byte
}

// Global is a defined global; Init is its constant expression without the
// final end.
type Global struct {
	Type    byte
	Mutable bool
	Init    []byte
}

// Table is a funcref table's limits; Max nil declares none.
type Table struct {
	Min uint32
	Max *uint32
}

// Custom is a custom section.
type Custom struct {
	Name  string
	Bytes []byte
}

// Module is a module to encode. Each imported and defined function gets a
// type of its own, in index order (see FuncType).
type Module struct {
	Imports  []Import
	Funcs    []Func
	NoMemory bool // define and export no memory
	// MemoryPages is the memory's minimum size in 64 KiB pages; 0 means 1.
	MemoryPages uint32
	Data        []Data
	Globals     []Global
	// Table, when not nil, defines table 0 with these function indices at
	// offset 0 (an active element segment).
	Table []uint32
	// Tables are more tables (funcref, no elements) after table 0, or from
	// index 0 when Table is nil.
	Tables []Table
	// Start, when not nil, is the start function's index.
	Start *uint32
	// Names, when set, adds a name section naming every function "f<index>"
	// ("<module>.<name>" for imports).
	Names  bool
	Custom []Custom
}

// ULEB encodes v as an unsigned LEB128.
func ULEB(v uint64) []byte {
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

// SLEB encodes v as a signed LEB128, as i32.const and i64.const take it.
func SLEB(v int64) []byte {
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

// I32Const and I64Const are the const instructions.
func I32Const(v int32) []byte  { return append([]byte{OpI32Const}, SLEB(int64(v))...) }
func I64Const(v uint64) []byte { return append([]byte{OpI64Const}, SLEB(int64(v))...) }

// Op is an instruction with one unsigned immediate: call, local.get, br ...
func Op(op byte, imm uint32) []byte { return append([]byte{op}, ULEB(uint64(imm))...) }

// Cat concatenates instructions.
func Cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func name(s string) []byte { return append(ULEB(uint64(len(s))), s...) }

func vec(items [][]byte) []byte {
	b := ULEB(uint64(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

// Section encodes a section.
func Section(id byte, content []byte) []byte {
	return append(append([]byte{id}, ULEB(uint64(len(content)))...), content...)
}

func funcType(params, results []byte) []byte {
	b := append([]byte{0x60}, ULEB(uint64(len(params)))...)
	b = append(b, params...)
	b = append(b, ULEB(uint64(len(results)))...)
	return append(b, results...)
}

// FuncImports is how many functions m imports: the index of its first
// defined function.
func (m Module) FuncImports() uint32 {
	n := uint32(0)
	for _, im := range m.Imports {
		if !im.Memory {
			n++
		}
	}
	return n
}

// FuncType is the type index of defined function i, for call_indirect.
func (m Module) FuncType(i int) uint32 { return m.FuncImports() + uint32(i) }

// Bytes encodes m.
func (m Module) Bytes() []byte {
	var types, imports, funcs, exports, codes, names [][]byte
	for _, im := range m.Imports {
		entry := append(name(im.Module), name(im.Name)...)
		if im.Memory {
			entry = append(entry, 0x02, 0x00, 0x01)
		} else {
			entry = append(entry, 0x00)
			entry = append(entry, ULEB(uint64(len(types)))...)
			names = append(names, append(ULEB(uint64(len(types))), name(im.Module+"."+im.Name)...))
			types = append(types, funcType(im.Params, im.Results))
		}
		imports = append(imports, entry)
	}
	nImported := len(types)
	for i, f := range m.Funcs {
		idx := uint64(nImported + i)
		funcs = append(funcs, ULEB(uint64(len(types))))
		types = append(types, funcType(f.Params, f.Results))
		if f.Export != "" {
			exports = append(exports, append(append(name(f.Export), 0x00), ULEB(idx)...))
		}
		names = append(names, append(ULEB(idx), name("f"+strconv.FormatUint(idx, 10))...))
		body := ULEB(uint64(len(f.Locals)))
		for _, l := range f.Locals {
			body = append(append(body, ULEB(uint64(l.N))...), l.Type)
		}
		body = append(body, f.Body...)
		body = append(body, OpEnd)
		codes = append(codes, append(ULEB(uint64(len(body))), body...))
	}
	if !m.NoMemory {
		exports = append(exports, append(name("memory"), 0x02, 0x00))
	}

	out := []byte("\x00asm\x01\x00\x00\x00")
	out = append(out, Section(1, vec(types))...)
	if len(imports) > 0 {
		out = append(out, Section(2, vec(imports))...)
	}
	out = append(out, Section(3, vec(funcs))...)
	var tables [][]byte
	if m.Table != nil {
		tables = append(tables, append([]byte{0x70, 0x00}, ULEB(uint64(len(m.Table)))...))
	}
	for _, t := range m.Tables {
		entry := append([]byte{0x70, 0x00}, ULEB(uint64(t.Min))...)
		if t.Max != nil {
			entry[1] = 0x01
			entry = append(entry, ULEB(uint64(*t.Max))...)
		}
		tables = append(tables, entry)
	}
	if len(tables) > 0 {
		out = append(out, Section(4, vec(tables))...)
	}
	if !m.NoMemory {
		out = append(out, Section(5, vec([][]byte{append([]byte{0x00}, ULEB(uint64(max(m.MemoryPages, 1)))...)}))...)
	}
	if len(m.Globals) > 0 {
		var gs [][]byte
		for _, g := range m.Globals {
			mut := byte(0)
			if g.Mutable {
				mut = 1
			}
			gs = append(gs, append(append([]byte{g.Type, mut}, g.Init...), OpEnd))
		}
		out = append(out, Section(6, vec(gs))...)
	}
	out = append(out, Section(7, vec(exports))...)
	if m.Start != nil {
		out = append(out, Section(8, ULEB(uint64(*m.Start)))...)
	}
	if m.Table != nil {
		seg := append([]byte{0x00}, I32Const(0)...)
		seg = append(seg, OpEnd)
		seg = append(seg, ULEB(uint64(len(m.Table)))...)
		for _, f := range m.Table {
			seg = append(seg, ULEB(uint64(f))...)
		}
		out = append(out, Section(9, vec([][]byte{seg}))...)
	}
	out = append(out, Section(10, vec(codes))...)
	if len(m.Data) > 0 {
		var segs [][]byte
		for _, d := range m.Data {
			seg := append([]byte{0x00}, I32Const(int32(d.Offset))...)
			seg = append(seg, OpEnd)
			seg = append(seg, ULEB(uint64(len(d.Bytes)))...)
			segs = append(segs, append(seg, d.Bytes...))
		}
		out = append(out, Section(11, vec(segs))...)
	}
	if m.Names {
		sub := vec(names)
		content := append(name("name"), 1)
		content = append(content, ULEB(uint64(len(sub)))...)
		out = append(out, Section(0, append(content, sub...))...)
	}
	for _, c := range m.Custom {
		out = append(out, Section(0, append(name(c.Name), c.Bytes...))...)
	}
	return out
}
