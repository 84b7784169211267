package checkpoint

import (
	"bytes"
	"fmt"
	"strings"
)

// Import names the function Insert adds to the module's imports. The host
// must provide it with the type () -> i32: it returns how many counted checks
// (loop heads, function entries, stretches of MaxStretch instructions) the
// guest may pass before the next call.
type Import struct {
	Module, Name string
}

// Section ids of the binary format.
const (
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secTable    = 4
	secMemory   = 5
	secGlobal   = 6
	secExport   = 7
	secStart    = 8
	secElement  = 9
	secCode     = 10
	secData     = 11
)

// sectionOrder is where each known section must appear: the binary format
// orders them by this rank, not by id.
var sectionOrder = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

var sectionNames = map[byte]string{secType: "type section", secImport: "import section", secGlobal: "global section"}

var header = []byte("\x00asm\x01\x00\x00\x00")

type section struct {
	id   byte
	body []byte
	at   int // offset of body in the module
}

// Limits are what Insert enforces on the module besides the checkpoints.
type Limits struct {
	// TableElements caps the elements of all the module's tables together:
	// Insert refuses a module whose tables' minimum sizes add up to more,
	// and lowers the tables' maximum sizes so that table.grow fails (returns
	// -1) before they add up to more. Zero means no cap.
	TableElements uint32
	// RenameImports, when set, maps an import module's name to the name
	// the rewritten module imports it under: a host that must wrap every
	// function of an import module it does not build itself provides the
	// wrappers under the new name.
	RenameImports map[string]string
}

// Insert returns a copy of wasm whose loops and functions count down a new
// global, starting at interval, and call the function imported as imp when
// it reaches zero (see the package documentation). wasm itself is not
// modified.
//
// Errors wrap ErrMalformed, ErrUnsupported or ErrReservedImport and say
// where in the binary the problem is.
func Insert(wasm []byte, imp Import, interval uint32) ([]byte, error) {
	return InsertWithLimits(wasm, imp, interval, Limits{})
}

// InsertWithLimits is Insert that also enforces limits. A module beyond them
// fails with ErrTableLimit.
func InsertWithLimits(wasm []byte, imp Import, interval uint32, limits Limits) ([]byte, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], header[:4]) {
		return nil, fmt.Errorf("%w: no WebAssembly magic bytes", ErrMalformed)
	}
	if !bytes.Equal(wasm[4:8], header[4:]) {
		if wasm[6] == 1 { // the layer field: 1 is a component
			return nil, fmt.Errorf("%w: a component, not a core module: build a core wasm module", ErrUnsupported)
		}
		return nil, fmt.Errorf("%w: binary format version % x, want 01 00 00 00", ErrUnsupported, wasm[4:8])
	}
	sections, err := split(wasm)
	if err != nil {
		return nil, err
	}
	m := &module{imp: imp, interval: interval, limits: limits}
	if err := m.survey(sections); err != nil {
		return nil, err
	}

	out := append(make([]byte, 0, len(wasm)+len(wasm)/8), header...)
	added := map[byte]bool{} // sections Insert creates when the module has none
	addMissing := func(beforeRank int) {
		for _, id := range []byte{secType, secImport, secGlobal} { // the charge needs no section of its own: see chargeBody
			if !m.has[id] && !added[id] && sectionOrder[id] < beforeRank {
				out = appendSection(out, id, m.extend(id, nil))
				added[id] = true
			}
		}
	}
	for _, s := range sections {
		if s.id != secCustom {
			addMissing(sectionOrder[s.id])
		}
		body, keep, err := m.section(s)
		if err != nil {
			return nil, err
		}
		if keep {
			out = appendSection(out, s.id, body)
		}
	}
	addMissing(len(sectionOrder) + 1)
	return out, nil
}

// split cuts the module into its sections.
func split(wasm []byte) ([]section, error) {
	r := newReader(wasm[8:], 8, "section header")
	var out []section
	for !r.done() {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		if _, known := sectionOrder[id]; !known && id != secCustom {
			return nil, r.fail("unknown section id %d", id)
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		at := r.base + r.off
		body, err := r.bytes(size)
		if err != nil {
			return nil, err
		}
		out = append(out, section{id: id, body: body, at: at})
	}
	return out, nil
}

func appendSection(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = appendULEB(out, uint64(len(body)))
	return append(out, body...)
}

// module is what Insert learns about the module before rewriting it.
type module struct {
	imp      Import
	interval uint32
	limits   Limits
	has      map[byte]bool

	types       uint32 // type count: the checkpoint's type index (the charge's is one more)
	funcImports uint32 // imported functions: the checkpoint's function index
	defined     uint32 // functions the module defines (the function section's count)
	bodies      uint32 // the code section's count, which must equal defined
	globals     uint32 // imported and defined globals: the countdown's index
	// importTypes and funcTypes are the largest type index (plus one) the
	// import and function sections name, checked once types is known.
	importTypes, funcTypes uint32
	plan                   *plan
	// importModules collects the module names of the imports, for
	// ImportModules.
	importModules map[string]bool
}

// survey counts what the rewrite needs: types, imported functions, globals.
func (m *module) survey(sections []section) error {
	m.has = map[byte]bool{}
	for _, s := range sections {
		m.has[s.id] = true
		var err error
		switch s.id {
		case secType:
			if err = checkTypes(newReader(s.body, s.at, "type section")); err == nil {
				m.types, err = newReader(s.body, s.at, "type section").count()
			}
		case secImport:
			err = m.surveyImports(newReader(s.body, s.at, "import section"))
		case secGlobal:
			var n uint32
			n, err = newReader(s.body, s.at, "global section").count()
			m.globals += n
		case secFunction:
			m.defined, m.funcTypes, err = checkFunctions(newReader(s.body, s.at, "function section"))
		case secCode:
			m.bodies, err = newReader(s.body, s.at, "code section").count()
		}
		if err != nil {
			return err
		}
	}
	if m.defined != m.bodies {
		return fmt.Errorf("%w: the function section declares %d functions and the code section has %d bodies", ErrMalformed, m.defined, m.bodies)
	}
	if t := max(m.importTypes, m.funcTypes); t > m.types {
		return fmt.Errorf("%w: a function names type %d, and the module has %d types", ErrMalformed, t-1, m.types)
	}
	m.plan = newPlan(m)
	return nil
}

func (m *module) surveyImports(r *reader) error {
	return r.vector(func() error {
		mod, err := r.name()
		if err != nil {
			return err
		}
		name, err := r.name()
		if err != nil {
			return err
		}
		if m.importModules != nil {
			m.importModules[mod] = true
		}
		if mod == m.imp.Module {
			return fmt.Errorf("%w: the module imports %s.%s, and %q is reserved for the host", ErrReservedImport, mod, name, mod)
		}
		kind, t, err := importDesc(r)
		switch kind {
		case 0x00:
			m.funcImports++
			m.importTypes = max(m.importTypes, t+1)
		case 0x03:
			m.globals++
		}
		return err
	})
}

// importDesc reads an import's description: its kind and, for a function,
// its type index.
func importDesc(r *reader) (kind byte, typ uint32, err error) {
	if kind, err = r.byte(); err != nil {
		return 0, 0, err
	}
	switch kind {
	case 0x00: // function: type index
		typ, err = r.u32()
	case 0x01: // table: reference type, limits
		if err = r.skipLEB(33); err == nil {
			err = skipLimits(r)
		}
	case 0x02: // memory: limits
		err = skipLimits(r)
	case 0x03: // global: value type, mutability
		if err = r.skipLEB(33); err == nil {
			_, err = r.byte()
		}
	case 0x04: // tag: attribute, type index
		if _, err = r.byte(); err == nil {
			err = r.skipLEB(32)
		}
	default:
		err = r.fail("unknown import kind %#x", kind)
	}
	return kind, typ, err
}

func skipLimits(r *reader) error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if err := r.skipLEB(64); err != nil {
		return err
	}
	if flags&1 != 0 {
		return r.skipLEB(64)
	}
	return nil
}

// section returns the rewritten body of s, or keep=false to drop it.
func (m *module) section(s section) (body []byte, keep bool, err error) {
	switch s.id {
	case secType, secImport, secGlobal:
		body, err = m.extendSection(s)
	case secExport:
		body, err = m.exports(newEditor(s, "export section"))
	case secStart:
		e := newEditor(s, "start section")
		err = e.funcIndex(m.plan)
		body = e.finish()
	case secElement:
		body, err = m.elements(newEditor(s, "element section"))
	case secCode:
		body, err = m.code(newReader(s.body, s.at, "code section"))
	case secCustom:
		return m.custom(s)
	case secFunction:
		body, err = m.functions(s)
	case secTable:
		body, err = m.tables(newReader(s.body, s.at, "table section"))
	case secMemory:
		body, err = s.body, checkMemories(newReader(s.body, s.at, "memory section"))
	case secData:
		body, err = s.body, checkData(newReader(s.body, s.at, "data section"), m.plan)
	default:
		body = s.body
	}
	return body, err == nil, err
}

// extendSection appends the checkpoint's entry to the type, import or
// global section.
func (m *module) extendSection(s section) ([]byte, error) {
	r := newReader(s.body, s.at, sectionNames[s.id])
	n, err := r.count()
	if err != nil {
		return nil, err
	}
	switch s.id {
	case secType: // the checkpoint's type and the charge's
		return m.extend(s.id, appendULEB(nil, uint64(n)+2), r.rest()), nil
	case secImport:
		if len(m.limits.RenameImports) == 0 {
			return m.extend(s.id, appendULEB(nil, uint64(n)+1), r.rest()), nil
		}
		out := appendULEB(nil, uint64(n)+1)
		for range n {
			mod, err := r.name()
			if err != nil {
				return nil, err
			}
			if to, ok := m.limits.RenameImports[mod]; ok {
				mod = to
			}
			out = appendName(out, mod)
			start := r.off
			if _, err := r.name(); err != nil {
				return nil, err
			}
			if _, _, err := importDesc(r); err != nil {
				return nil, err
			}
			out = append(out, r.b[start:r.off]...)
		}
		return m.extend(s.id, out), nil
	}
	// Global initializers may hold ref.func, which must be renumbered.
	e := &editor{reader: r, out: appendULEB(nil, uint64(n)+1), mark: r.off}
	for range n {
		if _, err := r.byte(); err != nil { // value type
			return nil, err
		}
		if _, err := r.byte(); err != nil { // mutability
			return nil, err
		}
		if err := e.expr(m.plan); err != nil {
			return nil, err
		}
	}
	return m.extend(s.id, e.finish()), nil
}

// extend returns a section body: head and rest (the existing entries after
// their count) followed by the checkpoint's entry. With head nil it makes a
// section holding only that entry.
func (m *module) extend(id byte, head []byte, rest ...[]byte) []byte {
	if head == nil {
		head = []byte{1}
		if id == secType {
			head = []byte{2}
		}
	}
	out := head
	for _, r := range rest {
		out = append(out, r...)
	}
	switch id {
	case secType: // () -> i32, (i32) -> i32
		return append(out, 0x60, 0, 1, typeI32, 0x60, 1, typeI32, 1, typeI32)
	case secImport:
		out = appendName(out, m.imp.Module)
		out = appendName(out, m.imp.Name)
		out = append(out, 0x00)
		return appendULEB(out, uint64(m.types))
	default: // secGlobal: mutable i32 starting at interval
		out = append(out, typeI32, 1, opI32Const)
		out = appendSLEB(out, int64(int32(m.interval)))
		return append(out, opEnd)
	}
}

func (m *module) exports(e *editor) ([]byte, error) {
	err := e.vector(func() error {
		if _, err := e.name(); err != nil {
			return err
		}
		kind, err := e.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0x00:
			return e.funcIndex(m.plan)
		case 0x03:
			return e.globalIndex(m.plan)
		}
		return e.skipLEB(32)
	})
	return e.finish(), err
}

// elements renumbers the functions of every element segment. The flags of a
// segment say whether it has a table index and an offset (active), an element
// kind or a reference type, and function indices or expressions.
func (m *module) elements(e *editor) ([]byte, error) {
	err := e.vector(func() error {
		flags, err := e.u32()
		if err != nil {
			return err
		}
		if flags > 7 {
			return e.fail("element segment flags %d", flags)
		}
		if flags&1 == 0 { // active
			if flags&2 != 0 {
				if err := e.skipLEB(32); err != nil { // table index
					return err
				}
			}
			if err := e.expr(m.plan); err != nil { // offset
				return err
			}
		}
		if flags&3 != 0 { // element kind (a byte) or reference type
			if err := e.skipLEB(33); err != nil {
				return err
			}
		}
		count, err := e.count()
		if err != nil {
			return err
		}
		for range count {
			if flags&4 != 0 {
				err = e.expr(m.plan)
			} else {
				err = e.funcIndex(m.plan)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	return e.finish(), err
}

// code rewrites every function body.
func (m *module) code(r *reader) ([]byte, error) {
	n, err := r.count()
	if err != nil {
		return nil, err
	}
	count := uint64(n)
	if n > 0 {
		count++ // the charge, after the module's own functions
	}
	out := appendULEB(make([]byte, 0, len(r.b)+len(r.b)/8+64), count)
	var body []byte
	for i := range n {
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		at := r.base + r.off
		b, err := r.bytes(size)
		if err != nil {
			return nil, err
		}
		fn := m.funcImports + i
		br := newReader(b, at, "code of function")
		br.fn = int64(fn)
		body, err = m.body(br, fn, body[:0])
		if err != nil {
			return nil, err
		}
		out = appendULEB(out, uint64(len(body)))
		out = append(out, body...)
	}
	if !r.done() {
		return nil, r.fail("bytes after the last function body")
	}
	if n > 0 {
		charge := m.plan.chargeBody()
		out = appendULEB(out, uint64(len(charge)))
		out = append(out, charge...)
	}
	return out, nil
}

// functions appends the charge's type to the function section of a module
// that defines functions (a module without any has no bulk instruction to
// charge).
func (m *module) functions(s section) ([]byte, error) {
	r := newReader(s.body, s.at, "function section")
	n, err := r.count()
	if err != nil || n == 0 {
		return s.body, err
	}
	out := appendULEB(nil, uint64(n)+1)
	out = append(out, r.rest()...)
	return appendULEB(out, uint64(m.types)+1), nil
}

// body rewrites one function body into out: its locals unchanged, a check on
// entry unless every call reaches a loop head first (see startsWithLoop),
// and its instructions.
func (m *module) body(r *reader, fn uint32, out []byte) ([]byte, error) {
	if err := skipLocals(r, fn); err != nil {
		return nil, err
	}
	out = append(out, r.b[:r.off]...)
	if !startsWithLoop(r.b[r.off:]) {
		out = append(out, m.plan.check...)
	}
	out, err := m.plan.rewrite(r, out, true)
	if err != nil {
		return nil, err
	}
	if !r.done() {
		return nil, r.fail("bytes after the function's end")
	}
	return out, nil
}

// custom drops the sections that describe code offsets (DWARF, source
// maps), renumbers the name section and keeps the rest.
func (m *module) custom(s section) ([]byte, bool, error) {
	r := newReader(s.body, s.at, "custom section")
	name, err := r.name()
	if err != nil {
		return nil, false, err
	}
	switch {
	case strings.HasPrefix(name, ".debug_"), name == "sourceMappingURL", name == "external_debug_info":
		return nil, false, nil
	case name == "name":
		body, err := m.names(r)
		return body, err == nil, err
	}
	return s.body, true, nil
}

// names renumbers the functions of the name section: function names
// (subsection 1), local and label names (2 and 3, both keyed by function),
// and names the checkpoint import so that stack traces show it.
func (m *module) names(r *reader) ([]byte, error) {
	r.where = "name section"
	out := append([]byte(nil), r.b[:r.off]...)
	for !r.done() {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		at := r.base + r.off
		sub, err := r.bytes(size)
		if err != nil {
			return nil, err
		}
		switch id {
		case 0: // the module's name
			_, err = newReader(sub, at, "name section").name()
		case 1, 2, 3:
			sub, err = m.nameMap(newReader(sub, at, "name section"), id)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, id)
		out = appendULEB(out, uint64(len(sub)))
		out = append(out, sub...)
	}
	return out, nil
}

// nameMap renumbers one subsection keyed by function index. Function names
// (id 1) also gain the checkpoint's, in index order: after the imports'.
func (m *module) nameMap(r *reader, id byte) ([]byte, error) {
	n, err := r.count()
	if err != nil {
		return nil, err
	}
	count := uint64(n)
	var entries []byte
	pending := id == 1 // the checkpoint's name is still to be written
	nameCheckpoint := func() {
		entries = appendULEB(entries, uint64(m.funcImports))
		entries = appendName(entries, m.imp.Module+"."+m.imp.Name)
		count++
		pending = false
	}
	for range n {
		idx, err := r.u32()
		if err != nil {
			return nil, err
		}
		if pending && idx >= m.funcImports {
			nameCheckpoint()
		}
		entries = appendULEB(entries, uint64(m.plan.funcIndex(idx)))
		value := r.off
		if id == 1 {
			_, err = r.name()
		} else {
			err = skipNameMap(r)
		}
		if err != nil {
			return nil, err
		}
		entries = append(entries, r.b[value:r.off]...)
	}
	if pending {
		nameCheckpoint()
	}
	if !r.done() {
		return nil, r.fail("bytes after the name map")
	}
	return append(appendULEB(nil, count), entries...), nil
}

// skipNameMap skips a vector of (index, name).
func skipNameMap(r *reader) error {
	n, err := r.count()
	if err != nil {
		return err
	}
	for range n {
		if err := r.skipLEB(32); err != nil {
			return err
		}
		if _, err := r.name(); err != nil {
			return err
		}
	}
	return nil
}

// editor copies a section while replacing some of its values.
type editor struct {
	*reader
	out  []byte
	mark int // reader.b[mark:reader.off] is read but not yet copied
}

func newEditor(s section, where string) *editor {
	return &editor{reader: newReader(s.body, s.at, where)}
}

// funcIndex reads a function index and writes its new value.
func (e *editor) funcIndex(p *plan) error {
	at := e.off
	idx, err := e.u32()
	if err != nil {
		return err
	}
	if idx >= p.funcs {
		e.off = at
		return p.outOfRange(e.reader, "function", idx, p.funcs)
	}
	e.out = append(e.out, e.b[e.mark:at]...)
	e.out = appendULEB(e.out, uint64(p.funcIndex(idx)))
	e.mark = e.off
	return nil
}

// globalIndex reads a global index and checks it.
func (e *editor) globalIndex(p *plan) error {
	at := e.off
	idx, err := e.u32()
	if err == nil && idx >= p.globals {
		e.off = at
		return p.outOfRange(e.reader, "global", idx, p.globals)
	}
	return err
}

// expr copies a constant expression, renumbering its ref.func.
func (e *editor) expr(p *plan) error {
	e.out = append(e.out, e.b[e.mark:e.off]...)
	out, err := p.rewrite(e.reader, e.out, false)
	if err != nil {
		return err
	}
	e.out, e.mark = out, e.off
	return nil
}

// finish copies what is left and returns the new body.
func (e *editor) finish() []byte {
	e.out = append(e.out, e.b[e.mark:]...)
	e.mark = len(e.b)
	return e.out
}
