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

// checkBody walks one rewritten function body.
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
	depth, charged := 0, false
	for {
		opAt := r.off
		op, err := r.byte()
		if err != nil {
			return err
		}
		wasCharged := charged
		charged = false
		switch op {
		case opEnd:
			if depth == 0 {
				return nil
			}
			depth--
		case opBlock, opIf:
			depth++
			err = r.skipLEB(33)
		case opLoop:
			depth++
			if err = r.skipLEB(33); err == nil {
				if !bytes.HasPrefix(r.b[r.off:], p.check) {
					return fmt.Errorf("loop head at byte %d is not charged", opAt)
				}
				r.off += len(p.check)
			}
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
			case idx == p.charge && op == opCall:
				charged = true
			case idx == p.charge:
				return fmt.Errorf("names the charge at byte %d", opAt)
			}
		case opMisc:
			sub, err := r.u32()
			if err != nil {
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
