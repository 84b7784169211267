package checkpoint

// This file is a white-box test: the property it checks is about the layout
// of the rewrite (which global is the countdown, which function the charge),
// which only this package knows.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	wb "github.com/kubeplug/kubeplug/host/runtime/internal/wasmbuild"
)

var propImport = Import{Module: "kubeplug:prop", Name: "checkpoint"}

// FuzzInsertCharges checks the property the deadline rests on: for any
// module Insert accepts, the rewritten code writes the countdown only inside
// the inserted check sequences and the charge function, calls the
// checkpoint only from there, and charges every function entry, every loop
// head and every bulk instruction.
//
//	go test -fuzz FuzzInsertCharges ./runtime/internal/checkpoint
func FuzzInsertCharges(f *testing.F) {
	for _, seed := range propertySeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := InsertWithLimits(wasm, propImport, 100, Limits{TableElements: 1000})
		if err != nil {
			return
		}
		if err := checkCharged(out); err != nil {
			t.Fatalf("%v\ninput: %x", err, wasm)
		}
	})
}

// propertySeeds are hand-built modules with loops, bulk instructions,
// tables and globals, and real guests: a stock-Go guest built from
// ../../testdata/guests/good and, when `make guests` has run, the reference
// guests.
func propertySeeds(tb testing.TB) [][]byte {
	tb.Helper()
	fill := wb.Cat(wb.I32Const(0), wb.I32Const(0), wb.I32Const(1024), []byte{0xfc, 11, 0})  // memory.fill
	cp := wb.Cat(wb.I32Const(0), wb.I32Const(8), wb.I32Const(1024), []byte{0xfc, 10, 0, 0}) // memory.copy
	loop := wb.Cat([]byte{wb.OpLoop, wb.BlockEmpty}, fill, cp, wb.Op(wb.OpBr, 0), []byte{wb.OpEnd})
	seeds := [][]byte{
		wb.Module{Funcs: []wb.Func{{Export: "fill", Body: loop}, {Body: fill}}}.Bytes(),
		wb.Module{
			Globals: []wb.Global{{Type: wb.I32, Mutable: true, Init: wb.I32Const(0)}},
			Table:   []uint32{0},
			Tables:  []wb.Table{{Min: 3}},
			Funcs:   []wb.Func{{Body: wb.Cat(wb.I32Const(1), wb.Op(wb.OpGlobalSet, 0))}},
			Names:   true,
		}.Bytes(),
		[]byte("\x00asm\x01\x00\x00\x00"),
		stretchModule(3000, 0), stretchModule(200, 120),
	}
	dir := tb.TempDir()
	out := filepath.Join(dir, "good.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "../../testdata/guests/good")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build the Go seed guest: %v\n%s", err, b)
	}
	paths, _ := filepath.Glob("../../../../build/guests/*.wasm")
	for _, p := range append(paths, out) {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// stretchLoop is a body that loops n (its parameter) times over k steps of
// straight code, each adding 1 to local 1 (4 instructions), every step
// wrapped, when skip > 0, in a block that branches to its end over skip
// more steps, which never run; it returns local 1 (n×k).
func stretchLoop(k, skip int) []byte {
	step := wb.Cat(wb.Op(wb.OpLocalGet, 1), wb.I32Const(1), []byte{wb.OpI32Add}, wb.Op(wb.OpLocalSet, 1))
	var body []byte
	for range k {
		if skip == 0 {
			body = append(body, step...)
			continue
		}
		body = append(body, wb.OpBlock, wb.BlockEmpty)
		body = append(body, step...)
		body = append(body, wb.Op(wb.OpBr, 0)...)
		for range skip {
			body = append(body, step...)
		}
		body = append(body, wb.OpEnd)
	}
	return wb.Cat(
		[]byte{wb.OpLoop, wb.BlockEmpty}, body,
		wb.Op(wb.OpLocalGet, 0), wb.I32Const(1), []byte{wb.OpI32Sub}, wb.Op(wb.OpLocalTee, 0),
		wb.Op(wb.OpBrIf, 0),
		[]byte{wb.OpEnd},
		wb.Op(wb.OpLocalGet, 1),
	)
}

// StretchLoop is stretchLoop, for the package's external tests.
var StretchLoop = stretchLoop

// stretchModule is a module whose one function loops over a long stretch
// of straight code (stretchLoop).
func stretchModule(k, skip int) []byte {
	return wb.Module{Funcs: []wb.Func{{Export: "run", Params: []byte{wb.I32}, Results: []byte{wb.I32},
		Locals: []wb.Locals{{N: 1, Type: wb.I32}}, Body: stretchLoop(k, skip)}}}.Bytes()
}

// The checker catches what it must: without this, a checker that accepts
// everything would make the fuzz target pass.
func TestCheckBodyRejectsUnchargedCode(t *testing.T) {
	p := newPlan(&module{funcImports: 1, globals: 2, defined: 3})
	args := []byte{opI32Const, 0, opI32Const, 0, opI32Const, 9}
	fill := append(append([]byte(nil), args...), 0xfc, 11, 0)
	chargedFill := wb.Cat(args, p.callCharge, []byte{0xfc, 11, 0})
	body := func(parts ...[]byte) []byte { return append(wb.Cat(append([][]byte{{0}}, parts...)...), opEnd) }
	for _, tt := range []struct {
		name string
		code []byte
		want string // "" for a correctly charged body
	}{
		{"charged", body(p.check, []byte{opLoop, blockEmpty}, p.check, chargedFill, []byte{opEnd}), ""},
		{"entry not charged", body([]byte{opI32Const, 1, 0x1a}), "function entry"},
		{"loop head not charged", body(p.check, []byte{opLoop, blockEmpty, opEnd}), "loop head"},
		{"bulk not charged", body(p.check, fill), "bulk instruction 0xfc 11"},
		{"charge not right before", body(p.check, args, p.callCharge, []byte{0x01}, []byte{0xfc, 11, 0}), "bulk instruction"},
		{"stretch checked", body(p.check, nops(MaxStretch), p.check, nops(MaxStretch-1)), ""},
		{"stretch too long", body(p.check, nops(MaxStretch), p.check, nops(MaxStretch)), "a path of 256 instructions without a check"},
		// A branch around a check carries its count past it: the block's
		// end is reached after 203 instructions, not 1, and the function's
		// own end counts too.
		{"branch around a check", body(p.check, []byte{opBlock, blockEmpty}, nops(200), []byte{opBr, 0}, nops(MaxStretch-202), p.check,
			[]byte{opEnd}, nops(MaxStretch-204)), ""},
		{"branch around a check, too long", body(p.check, []byte{opBlock, blockEmpty}, nops(200), []byte{opBr, 0}, nops(MaxStretch-202), p.check,
			[]byte{opEnd}, nops(MaxStretch-202)), "a path of 256 instructions without a check"},
		{"the false way of an if around a check", body(p.check, nops(200), []byte{opI32Const, 0, opIf, blockEmpty}, nops(MaxStretch-202), p.check,
			[]byte{opEnd}, nops(MaxStretch-202)), "a path of 256 instructions without a check"},
		{"a call ends the stretch", body(p.check, nops(MaxStretch-1), []byte{opCall, 2}, nops(MaxStretch-1)), ""},
		{"a call to an import does not", body(p.check, nops(MaxStretch-2), []byte{opCall, 0}, nops(MaxStretch-1)), "a path of 256 instructions without a check"},
		{"nothing falls through a br", body(p.check, []byte{opBlock, blockEmpty}, nops(MaxStretch-10), []byte{opBr, 0}, nops(MaxStretch-2),
			[]byte{opEnd}), ""},
		{"the branch's count goes on", body(p.check, []byte{opBlock, blockEmpty}, nops(MaxStretch-3), []byte{opBr, 0}, nops(10),
			[]byte{opEnd}, nops(1)), "a path of 256 instructions without a check"},
		{"countdown written", body(p.check, []byte{opI32Const, 5, opGlobalSet, 2}), "writes the countdown"},
		{"checkpoint called", body(p.check, []byte{opCall, 1, 0x1a}), "names the checkpoint"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkBody(p, tt.code, 2)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.want)) {
				t.Fatalf("checkBody = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// nops is n nop instructions.
func nops(n int) []byte { return bytes.Repeat([]byte{0x01}, n) }

// surveyRewritten returns the plan of a rewritten module: its countdown is
// its last global, its checkpoint its last imported function, its charge its
// last defined function.
func surveyRewritten(out []byte) (*plan, error) {
	sections, err := split(out)
	if err != nil {
		return nil, err
	}
	m := &module{imp: Import{Module: "\x00not an import name"}}
	if err := m.survey(sections); err != nil {
		return nil, err
	}
	if m.funcImports == 0 || m.globals == 0 {
		return nil, fmt.Errorf("the rewrite has no checkpoint import or no countdown")
	}
	orig := &module{funcImports: m.funcImports - 1, globals: m.globals - 1}
	if m.defined > 0 {
		orig.defined = m.defined - 1
	}
	return newPlan(orig), nil
}

// checkCharged checks the property of FuzzInsertCharges on a rewritten
// module.
func checkCharged(out []byte) error {
	p, err := surveyRewritten(out)
	if err != nil {
		return err
	}
	checkpointFn := p.imported
	sections, _ := split(out)
	for _, s := range sections {
		switch s.id {
		case secExport:
			r := newReader(s.body, s.at, "export section")
			err := r.vector(func() error {
				if _, err := r.name(); err != nil {
					return err
				}
				kind, _ := r.byte()
				idx, err := r.u32()
				switch {
				case kind == 0 && (idx == checkpointFn || idx == p.charge):
					return fmt.Errorf("exports the rewrite's function %d", idx)
				case kind == 3 && idx == p.countdown:
					return fmt.Errorf("exports the countdown")
				}
				return err
			})
			if err != nil {
				return err
			}
		case secCode:
			r := newReader(s.body, s.at, "code section")
			n, err := r.count()
			if err != nil {
				return err
			}
			for i := range n {
				size, _ := r.u32()
				b, err := r.bytes(size)
				if err != nil {
					return err
				}
				if i == n-1 {
					if !bytes.Equal(b, p.chargeBody()) {
						return fmt.Errorf("the last function is not the charge: % x", b)
					}
					continue
				}
				if err := checkBody(p, b, p.imported+1+i); err != nil {
					return fmt.Errorf("function %d: %w", p.imported+1+i, err)
				}
			}
		}
	}
	return nil
}

// checkBody walks one rewritten function body. Besides the charges, it
// recounts the stretches: on every path from a check (an inserted check
// sequence, wherever it is) the instructions before the next one, a branch
// to a block or an if carrying its count to the block's end, must stay
// under MaxStretch.
func checkBody(p *plan, code []byte, fn uint32) error {
	r := newReader(code, 0, "body")
	if err := skipLocals(r, fn); err != nil {
		return err
	}
	if bytes.HasPrefix(r.b[r.off:], p.check) {
		r.off += len(p.check)
	} else if !startsWithLoop(r.b[r.off:]) {
		return fmt.Errorf("function entry at byte %d is not charged", r.off)
	}
	var frames []frame
	var run int32
	toEnd := func(l uint32) {
		if int(l) < len(frames) && frames[len(frames)-1-int(l)].op != opLoop {
			f := &frames[len(frames)-1-int(l)]
			f.pending = max(f.pending, run)
		}
	}
	charged := false
	for {
		switch rest := r.b[r.off:]; {
		case bytes.HasPrefix(rest, p.check):
			r.off += len(p.check)
			run, charged = 0, false
			continue
		case bytes.HasPrefix(rest, p.callCharge):
			r.off += len(p.callCharge)
			charged = true
			continue
		}
		opAt := r.off
		if run >= MaxStretch {
			return fmt.Errorf("a path of %d instructions without a check reaches byte %d", run, opAt)
		}
		run++
		op, err := r.byte()
		if err != nil {
			return err
		}
		wasCharged := charged
		charged = false
		switch op {
		case opEnd:
			if len(frames) == 0 {
				return nil
			}
			f := frames[len(frames)-1]
			frames = frames[:len(frames)-1]
			run = max(run, f.pending+1)
			if f.op == opIf && !f.hasElse {
				run = max(run, f.atIf+1)
			}
		case opElse:
			if len(frames) == 0 || frames[len(frames)-1].op != opIf {
				return fmt.Errorf("else outside an if at byte %d", opAt)
			}
			f := &frames[len(frames)-1]
			f.pending, f.hasElse = max(f.pending, run), true
			run = f.atIf + 1
		case opBlock, opIf:
			frames = append(frames, frame{op: op, atIf: run})
			err = r.skipLEB(33)
		case opLoop:
			frames = append(frames, frame{op: op})
			if err = r.skipLEB(33); err == nil {
				if !bytes.HasPrefix(r.b[r.off:], p.check) {
					return fmt.Errorf("loop head at byte %d is not charged", opAt)
				}
				r.off += len(p.check)
				run = 0
			}
		case opBr, opBrIf:
			var l uint32
			if l, err = r.u32(); err == nil {
				toEnd(l)
			}
			if op == opBr {
				run = 0 // what follows runs on no path
			}
		case opBrTable:
			var n uint32
			if n, err = r.count(); err == nil {
				for i := uint64(0); err == nil && i <= uint64(n); i++ {
					var l uint32
					if l, err = r.u32(); err == nil {
						toEnd(l)
					}
				}
			}
			run = 0
		case opUnreachable, opReturn:
			run = 0
		case opRetCallInd:
			err = skipImmediates(r, op, opAt)
			run = 0
		case opGlobalSet:
			var idx uint32
			if idx, err = r.u32(); err == nil && idx == p.countdown {
				return fmt.Errorf("writes the countdown at byte %d, outside a check", opAt)
			}
		case opCall, opRetCall, opRefFunc:
			var idx uint32
			idx, err = r.u32()
			switch {
			case err != nil:
			case idx == p.imported:
				return fmt.Errorf("names the checkpoint at byte %d, outside a check", opAt)
			case idx == p.charge:
				return fmt.Errorf("names the charge at byte %d", opAt)
			case op == opRetCall || (op == opCall && idx > p.imported):
				run = 0 // a defined function: its entry is charged (checked above for every body)
			}
		case opMisc:
			var sub uint32
			if sub, err = r.u32(); err != nil {
				return err
			}
			if isBulk(sub) && !wasCharged {
				return fmt.Errorf("bulk instruction 0xfc %d at byte %d is not charged", sub, opAt)
			}
			r.off = opAt + 1
			err = skipMisc(r, opAt)
		default:
			err = skipImmediates(r, op, opAt)
		}
		if err != nil {
			return err
		}
	}
}
