package checkpoint

// plan is what rewriting instructions needs to know about the module.
type plan struct {
	// imported is how many functions the module imported: every function
	// index from imported on moves up by one, to make room for the
	// checkpoint import at index imported.
	imported uint32
	// check is the sequence inserted at loop heads and function entries.
	check []byte
}

func newPlan(imported, countdown uint32) *plan {
	p := &plan{imported: imported}
	g := appendULEB(nil, uint64(countdown))
	b := append([]byte{opGlobalGet}, g...)
	b = append(b, opIf, blockEmpty, opGlobalGet)
	b = append(b, g...)
	b = append(b, opI32Const, 1, opI32Sub, opGlobalSet)
	b = append(b, g...)
	b = append(b, opElse, opCall)
	b = appendULEB(b, uint64(imported))
	b = append(b, opGlobalSet)
	b = append(b, g...)
	p.check = append(b, opEnd)
	return p
}

// funcIndex is the new index of the function at old index i.
func (p *plan) funcIndex(i uint32) uint32 {
	if i >= p.imported {
		return i + 1
	}
	return i
}

// Opcodes and immediates Insert writes or must recognise by name.
const (
	opBlock     = 0x02
	opLoop      = 0x03
	opIf        = 0x04
	opElse      = 0x05
	opEnd       = 0x0b
	opCall      = 0x10
	opRetCall   = 0x12
	opGlobalGet = 0x23
	opGlobalSet = 0x24
	opI32Const  = 0x41
	opI32Sub    = 0x6b
	opRefFunc   = 0xd2
	blockEmpty  = 0x40
	typeI32     = 0x7f
)

// rewrite copies one instruction sequence from r to out: renumbering the
// function indices of call, return_call and ref.func and, with check set,
// inserting p.check after the block type of every loop. It consumes the
// sequence up to and including the end that closes it (a function body or a
// constant expression).
func (p *plan) rewrite(r *reader, out []byte, check bool) ([]byte, error) {
	mark := r.off // r.b[mark:r.off] is read but not yet copied to out
	depth := 0
	b := r.b
	for {
		opAt := r.off
		if opAt >= len(b) {
			return nil, r.eof()
		}
		op := b[opAt]
		r.off++
		var err error
		switch {
		case op == opEnd:
			if depth == 0 {
				return append(out, r.b[mark:r.off]...), nil
			}
			depth--
		case op == opBlock || op == opIf:
			depth++
			err = r.skipLEB(33) // block type: empty, a value type, or a type index
		case op == opLoop:
			depth++
			if err = r.skipLEB(33); err == nil && check {
				out = append(out, r.b[mark:r.off]...)
				out = append(out, p.check...)
				mark = r.off
			}
		case op == opCall || op == opRetCall || op == opRefFunc:
			immAt := r.off
			var idx uint32
			if idx, err = r.u32(); err == nil {
				out = append(out, r.b[mark:immAt]...)
				out = appendULEB(out, uint64(p.funcIndex(idx)))
				mark = r.off
			}
		default:
			// The fast path, most instructions: none or a one-byte immediate.
			switch opImmediates[op] {
			case immNone:
				continue
			case immLEB32, immLEB33, immLEB64:
				if r.off < len(b) && b[r.off] < 0x80 {
					r.off++
					continue
				}
			}
			err = skipImmediates(r, op, opAt)
		}
		if err != nil {
			return nil, err
		}
	}
}

// immediates is what follows an opcode in the instruction stream.
type immediates uint8

const (
	immUnsupported immediates = iota // not an instruction the runtime runs
	immNone
	immLEB32    // an index, a label, an i32
	immLEB33    // a block type or heap type
	immLEB64    // an i64
	immTwoLEB32 // call_indirect's type and table
	immBrTable
	immSelectT
	immMemarg
	immBytes4 // f32
	immBytes8 // f64
	immMisc   // the 0xfc prefix
	immSIMD   // the 0xfd prefix
	immAtomic // the 0xfe prefix
)

// opImmediates classifies every one-byte opcode of the instruction set
// wazero runs: 2.0 (sign extension, saturating truncation, multiple values,
// reference types, bulk memory, SIMD), threads, tail calls and multiple
// memories. Exception handling and GC are not among them.
var opImmediates = func() (t [256]immediates) {
	set := func(k immediates, ops ...int) {
		for _, op := range ops {
			t[op] = k
		}
	}
	// unreachable, nop, else, end, return, drop, select, ref.is_null
	set(immNone, 0x00, 0x01, 0x05, 0x0b, 0x0f, 0x1a, 0x1b, 0xd1)
	for op := 0x45; op <= 0xc4; op++ {
		t[op] = immNone // numeric instructions
	}
	set(immLEB33, 0x02, 0x03, 0x04, 0xd0) // block, loop, if, ref.null
	// br, br_if, call, return_call, local.*, global.*, table.get/set,
	// memory.size/grow, i32.const, ref.func
	set(immLEB32, 0x0c, 0x0d, 0x10, 0x12, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x3f, 0x40, 0x41, 0xd2)
	set(immTwoLEB32, 0x11, 0x13) // call_indirect, return_call_indirect
	set(immBrTable, 0x0e)
	set(immSelectT, 0x1c)
	for op := 0x28; op <= 0x3e; op++ {
		t[op] = immMemarg // loads and stores
	}
	set(immLEB64, 0x42)
	set(immBytes4, 0x43)
	set(immBytes8, 0x44)
	set(immMisc, 0xfc)
	set(immSIMD, 0xfd)
	set(immAtomic, 0xfe)
	return t
}()

// skipImmediates skips the immediates of op, one of the instructions that
// Insert copies unchanged.
func skipImmediates(r *reader, op byte, opAt int) error {
	switch opImmediates[op] {
	case immNone:
		return nil
	case immLEB32:
		return r.skipLEB(32)
	case immLEB33:
		return r.skipLEB(33)
	case immLEB64:
		return r.skipLEB(64)
	case immTwoLEB32:
		if err := r.skipLEB(32); err != nil {
			return err
		}
		return r.skipLEB(32)
	case immBrTable: // labels, then the default
		n, err := r.count()
		for i := uint64(0); err == nil && i <= uint64(n); i++ {
			err = r.skipLEB(32)
		}
		return err
	case immSelectT: // one byte per value type
		n, err := r.count()
		if err != nil {
			return err
		}
		return r.skip(int(n))
	case immMemarg:
		return skipMemarg(r)
	case immBytes4:
		return r.skip(4)
	case immBytes8:
		return r.skip(8)
	case immMisc:
		return skipMisc(r, opAt)
	case immSIMD:
		return skipSIMD(r, opAt)
	case immAtomic:
		return skipAtomic(r, opAt)
	}
	return at(ErrUnsupported, r.place(), r.base+opAt, "opcode %#02x is not one the runtime supports (exception handling and GC are not)", op)
}

// skipMemarg skips an alignment (with bit 6 set, a memory index follows) and
// an offset (64 bits wide for memory64).
func skipMemarg(r *reader) error {
	align, err := r.u32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 {
		if err := r.skipLEB(32); err != nil {
			return err
		}
	}
	return r.skipLEB(64)
}

// skipMisc skips the immediates of the 0xfc prefix: saturating truncation,
// bulk memory and table instructions.
func skipMisc(r *reader, opAt int) error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	indices := 0
	switch {
	case sub <= 7: // trunc_sat
	case sub == 9 || sub == 11 || sub == 13 || (sub >= 15 && sub <= 17):
		indices = 1 // data.drop, memory.fill, elem.drop, table.grow/size/fill
	case sub == 8 || sub == 10 || sub == 12 || sub == 14:
		indices = 2 // memory.init, memory.copy, table.init, table.copy
	default:
		return at(ErrUnsupported, r.place(), r.base+opAt, "instruction 0xfc %d is not one the runtime supports", sub)
	}
	for ; indices > 0; indices-- {
		if err := r.skipLEB(32); err != nil {
			return err
		}
	}
	return nil
}

// skipSIMD skips the immediates of the 0xfd prefix (fixed-width and relaxed
// SIMD).
func skipSIMD(r *reader, opAt int) error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 11 || sub == 92 || sub == 93: // loads and stores, load_zero
		return skipMemarg(r)
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		return r.skip(16)
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		return r.skip(1)
	case sub >= 84 && sub <= 91: // load_lane, store_lane
		if err := skipMemarg(r); err != nil {
			return err
		}
		return r.skip(1)
	case sub <= 0x113:
		return nil
	}
	return at(ErrUnsupported, r.place(), r.base+opAt, "instruction 0xfd %d is not one the runtime supports", sub)
}

// skipAtomic skips the immediates of the 0xfe prefix (threads).
func skipAtomic(r *reader, opAt int) error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub == 0x03: // atomic.fence
		return r.skip(1)
	case sub <= 0x02 || (sub >= 0x10 && sub <= 0x4e):
		return skipMemarg(r)
	}
	return at(ErrUnsupported, r.place(), r.base+opAt, "instruction 0xfe %d is not one the runtime supports", sub)
}

// startsWithLoop reports whether code reaches the head of a loop before it
// can branch, call, return or trap: only blocks, local and global accesses
// and constants come first. Such a function needs no check on entry, the
// loop head's check runs on every call. Stock Go begins nearly every
// function so (global.get, local.set, block, loop: its resumption loop),
// which halves the checks on its calls.
func startsWithLoop(code []byte) bool {
	r := newReader(code, 0, "")
	for range 8 {
		op, err := r.byte()
		if err != nil {
			return false
		}
		switch {
		case op == opLoop:
			return true
		case op == opBlock:
			err = r.skipLEB(33)
		case op >= 0x20 && op <= 0x24: // local.get/set/tee, global.get/set
			err = r.skipLEB(32)
		case op == opI32Const:
			err = r.skipLEB(32)
		case op == 0x42: // i64.const
			err = r.skipLEB(64)
		default:
			return false
		}
		if err != nil {
			return false
		}
	}
	return false
}

// skipExpr skips a constant expression that holds no function index (a data
// segment's offset).
func skipExpr(r *reader) error {
	for {
		opAt := r.off
		op, err := r.byte()
		if err != nil {
			return err
		}
		if op == opEnd {
			return nil
		}
		if err := skipImmediates(r, op, opAt); err != nil {
			return err
		}
	}
}
