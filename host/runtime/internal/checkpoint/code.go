package checkpoint

// plan is what rewriting instructions needs to know about the module.
type plan struct {
	// imported is how many functions the module imported: every function
	// index from imported on moves up by one, to make room for the
	// checkpoint import at index imported.
	imported uint32
	// funcs, globals and types are the sizes of the module's own index
	// spaces, before the rewrite adds to them. An instruction that names an
	// index beyond them is refused, so that guest code can never name what
	// the rewrite adds (the countdown global, the checkpoint import, the
	// charge function and their types), whatever a later validation says.
	funcs, globals, types uint32
	// countdown is the countdown global's index; charge is the charge
	// function's new index and checkpointType the checkpoint's type index.
	countdown, charge, checkpointType uint32
	// check is the sequence inserted at loop heads, function entries and
	// after every MaxStretch instructions of straight code; callCharge the
	// one inserted before every bulk instruction.
	check, callCharge []byte
	// frames is rewrite's stack of open blocks, kept between functions so
	// that it is allocated once per module.
	frames []frame
}

// MaxStretch is how many instructions a function may run between two
// counted checks: the rewrite inserts a check wherever a path from the last
// one (a function entry, a loop head or an earlier such check) reaches
// MaxStretch instructions. Without it a loop whose body is one long straight
// stretch would pass one counted check per pass however long the body, so a
// 64 MiB module could run minutes between two checkpoints (RATIONALE.md,
// "Why is straight code checked every 256 instructions?").
const MaxStretch = 256

// frame is an open block, loop or if of the code being rewritten, for
// counting stretches: the most instructions any path has run since the last
// check when it reaches the end of the block by a branch (pending), and for
// an if, the count at the if itself (where its else, or with none its end,
// is reached from).
type frame struct {
	op      byte
	atIf    int32
	pending int32
	hasElse bool
}

func newPlan(m *module) *plan {
	p := &plan{
		imported:       m.funcImports,
		funcs:          m.funcImports + m.defined,
		globals:        m.globals,
		types:          m.types,
		countdown:      m.globals,
		charge:         m.funcImports + 1 + m.defined,
		checkpointType: m.types,
	}
	g := appendULEB(nil, uint64(p.countdown))
	b := append([]byte{opGlobalGet}, g...)
	b = append(b, opIf, blockEmpty, opGlobalGet)
	b = append(b, g...)
	b = append(b, opI32Const, 1, opI32Sub, opGlobalSet)
	b = append(b, g...)
	b = append(b, opElse, opCall)
	b = appendULEB(b, uint64(p.imported))
	b = append(b, opGlobalSet)
	b = append(b, g...)
	p.check = append(b, opEnd)
	p.callCharge = appendULEB([]byte{opCall}, uint64(p.charge))
	return p
}

// BulkShift sets what a bulk instruction (memory.fill, memory.copy,
// memory.init, table.fill, table.copy, table.init) costs: one loop head per
// 2^BulkShift bytes or elements of its length, plus one. Filling 64 bytes
// takes about as long as one pass through a short loop, so a checkpoint
// interval of bulk work lasts about as long as one of ordinary code (see
// RATIONALE.md, "Why are bulk instructions charged by their length?").
const BulkShift = 6

// chargeBody is the code of the function the rewrite calls before every bulk
// instruction, with the instruction's length (the top of the stack), which
// it returns unchanged:
//
//	cost := len>>BulkShift + 1
//	if cost >= countdown { countdown = checkpoint() } else { countdown -= cost }
//	return len
//
// A checkpoint that lets the guest go on starts a full interval, so one bulk
// instruction, however long, runs between two checkpoints at most: that is
// the slack of the deadline for bulk work (one instruction over at most the
// memory cap).
func (p *plan) chargeBody() []byte {
	g := appendULEB(nil, uint64(p.countdown))
	cost := []byte{opLocalGet, 0, opI32Const, BulkShift, opI32ShrU, opI32Const, 1, opI32Add}
	b := []byte{0} // no locals
	b = append(b, cost...)
	b = append(b, opGlobalGet)
	b = append(b, g...)
	b = append(b, opI32GeU, opIf, blockEmpty, opCall)
	b = appendULEB(b, uint64(p.imported))
	b = append(b, opGlobalSet)
	b = append(b, g...)
	b = append(b, opElse, opGlobalGet)
	b = append(b, g...)
	b = append(b, cost...)
	b = append(b, opI32Sub, opGlobalSet)
	b = append(b, g...)
	return append(b, opEnd, opLocalGet, 0, opEnd)
}

// funcIndex is the new index of the function at old index i.
func (p *plan) funcIndex(i uint32) uint32 {
	if i >= p.imported {
		return i + 1
	}
	return i
}

// outOfRange is the error for an index beyond the module's own.
func (p *plan) outOfRange(r *reader, space string, idx, n uint32) error {
	return at(ErrMalformed, r.place(), r.base+r.off, "%s index %d is out of range: the module has %d", space, idx, n)
}

// Opcodes and immediates Insert writes or must recognise by name.
const (
	opUnreachable  = 0x00
	opBlock        = 0x02
	opLoop         = 0x03
	opIf           = 0x04
	opElse         = 0x05
	opEnd          = 0x0b
	opReturn       = 0x0f
	opCall         = 0x10
	opBr           = 0x0c
	opBrIf         = 0x0d
	opBrTable      = 0x0e
	opCallIndirect = 0x11
	opRetCall      = 0x12
	opRetCallInd   = 0x13
	opLocalGet     = 0x20
	opGlobalGet    = 0x23
	opGlobalSet    = 0x24
	opI32Const     = 0x41
	opI32GeU       = 0x4f
	opI32Add       = 0x6a
	opI32Sub       = 0x6b
	opI32ShrU      = 0x76
	opRefFunc      = 0xd2
	opMisc         = 0xfc
	blockEmpty     = 0x40
	typeI32        = 0x7f
)

// isBulk reports whether the 0xfc instruction sub takes a length: memory.init
// (8), memory.copy (10), memory.fill (11), table.init (12), table.copy (14),
// table.fill (17). The length is the last operand, so the top of the stack.
func isBulk(sub uint32) bool {
	return sub == 8 || sub == 10 || sub == 11 || sub == 12 || sub == 14 || sub == 17
}

// rewrite copies one instruction sequence from r to out: renumbering the
// function indices of call, return_call and ref.func, refusing indices
// beyond the module's, and with check set (a function body), inserting
// p.check after the block type of every loop and before any instruction
// that a path from the last check would reach after MaxStretch
// instructions, and p.callCharge before every bulk instruction. It consumes
// the sequence up to and including the end that closes it (a function body
// or a constant expression).
//
// The count of a path is kept in code order, which is the order of
// execution but for branches: a branch to a loop goes back to its head,
// which is checked; every other branch (br, br_if, br_table to a block or
// an if, and an if's way to its else or its end) goes forward, to an end or
// an else, and the count there is the largest of the paths that reach it.
// After an instruction that never falls through (br, br_table, return,
// unreachable, a tail call) the code up to the end of its block runs on no
// path, so the count starts again from 0 there: only the branches to the
// block's end carry a count past it.
//
// A call to a function the module defines ends the stretch: the callee
// runs a counted check (at its entry or its first loop head) before it can
// return, and that check pays for the caller's instructions after the call
// as well as for the callee's own, so a check pays for at most
// 2×MaxStretch instructions. A call to an import, or an indirect call
// (a table may hold an import), does not end it: a host function runs no
// counted check (it checks the deadline itself). This rests on body giving
// every function a check before it can return: a rewrite that leaves out
// some entry checks must end the stretch only at calls to functions that
// keep theirs.
func (p *plan) rewrite(r *reader, out []byte, check bool) ([]byte, error) {
	mark := r.off // r.b[mark:r.off] is read but not yet copied to out
	frames := p.frames[:0]
	var run int32 // instructions on the longest path since the last check
	b := r.b
	for {
		opAt := r.off
		if opAt >= len(b) {
			return nil, r.eof()
		}
		op := b[opAt]
		r.off++
		if check {
			if run >= MaxStretch {
				out = append(out, b[mark:opAt]...)
				out = append(out, p.check...)
				mark, run = opAt, 0
			}
			run++
		}
		var err error
		switch {
		case op == opEnd:
			if len(frames) == 0 {
				p.frames = frames
				return append(out, r.b[mark:r.off]...), nil
			}
			f := frames[len(frames)-1]
			frames = frames[:len(frames)-1]
			run = max(run, f.pending+1)
			if f.op == opIf && !f.hasElse {
				run = max(run, f.atIf+1) // the if's false way
			}
		case op == opElse:
			if len(frames) == 0 || frames[len(frames)-1].op != opIf || frames[len(frames)-1].hasElse {
				r.off = opAt
				return nil, r.fail("else outside an if")
			}
			f := &frames[len(frames)-1]
			f.pending = max(f.pending, run) // the then branch goes to the end
			f.hasElse = true
			run = f.atIf + 1
		case op == opBlock || op == opIf:
			frames = append(frames, frame{op: op, atIf: run})
			err = p.blockType(r)
		case op == opLoop:
			frames = append(frames, frame{op: op})
			if err = p.blockType(r); err == nil && check {
				out = append(out, r.b[mark:r.off]...)
				out = append(out, p.check...)
				mark, run = r.off, 0
			}
		case op == opBr || op == opBrIf:
			var l uint32
			if l, err = r.u32(); err == nil {
				branch(frames, l, run)
			}
			if op == opBr {
				run = 0 // nothing falls through: see unreachable
			}
		case op == opBrTable:
			var n uint32
			if n, err = r.count(); err == nil {
				for i := uint64(0); err == nil && i <= uint64(n); i++ { // the labels, then the default
					var l uint32
					if l, err = r.u32(); err == nil {
						branch(frames, l, run)
					}
				}
			}
			run = 0
		case op == opUnreachable || op == opReturn:
			run = 0
		case op == opCall || op == opRetCall || op == opRefFunc:
			immAt := r.off
			var idx uint32
			if idx, err = r.u32(); err == nil {
				if idx >= p.funcs {
					r.off = immAt
					return nil, p.outOfRange(r, "function", idx, p.funcs)
				}
				out = append(out, r.b[mark:immAt]...)
				out = appendULEB(out, uint64(p.funcIndex(idx)))
				mark = r.off
				if op == opRetCall || (op == opCall && idx >= p.imported) {
					run = 0 // the callee's check pays for what follows
				}
			}
		case op == opGlobalGet || op == opGlobalSet:
			err = p.index(r, "global", p.globals)
		case op == opCallIndirect || op == opRetCallInd:
			if err = p.index(r, "type", p.types); err == nil {
				err = r.skipLEB(32) // table
			}
			if op == opRetCallInd {
				run = 0
			}
		case op == opMisc:
			subAt := r.off
			var sub uint32
			if sub, err = r.u32(); err == nil {
				r.off = subAt
				if isBulk(sub) && check {
					out = append(out, r.b[mark:opAt]...)
					out = append(out, p.callCharge...)
					mark = opAt
				}
				err = skipMisc(r, opAt)
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

// branch records that a path of run instructions since the last check
// branches to label l of frames: to the end of a block or an if (a loop's
// label is its head, which is checked). A label beyond the frames is the
// function's own (a return) or invalid, which validation refuses.
func branch(frames []frame, l uint32, run int32) {
	if uint64(l) < uint64(len(frames)) {
		if f := &frames[len(frames)-1-int(l)]; f.op != opLoop {
			f.pending = max(f.pending, run)
		}
	}
}

// index reads an index into a space of n entries and refuses one beyond it.
func (p *plan) index(r *reader, space string, n uint32) error {
	at := r.off
	idx, err := r.u32()
	if err == nil && idx >= n {
		r.off = at
		return p.outOfRange(r, space, idx, n)
	}
	return err
}

// blockType reads a block type: empty or a value type (a negative s33, one
// byte) or a type index (non-negative), which must be one of the module's.
func (p *plan) blockType(r *reader) error {
	at := r.off
	if r.off < len(r.b) && r.b[r.off] < 0x80 {
		c := r.b[r.off]
		r.off++
		if c&0x40 == 0 && uint32(c) >= p.types { // a small non-negative value: a type index
			r.off = at
			return p.outOfRange(r, "type", uint32(c), p.types)
		}
		return nil
	}
	v, err := r.s33()
	if err == nil && v >= 0 && v >= int64(p.types) {
		r.off = at
		return p.outOfRange(r, "type", uint32(min(v, 1<<32-1)), p.types)
	}
	return err
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
