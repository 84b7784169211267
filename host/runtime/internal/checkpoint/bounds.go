package checkpoint

import "fmt"

// maxLocals bounds the locals of one function, as the engines of browsers
// do (V8 and SpiderMonkey: 50,000). Decoders allocate a function's locals
// before reading its code, so without a bound a body of a few bytes could
// make the host allocate 4 GiB.
const maxLocals = 50_000

// The sections below pass through Insert unchanged, but a decoder allocates
// their vectors from the lengths they declare. Insert walks them so that
// every length is backed by bytes before any decoder sees it.

// checkTypes walks the type section: function types only.
func checkTypes(r *reader) error {
	return r.vector(func() error {
		form, err := r.byte()
		if err != nil {
			return err
		}
		if form != 0x60 {
			return at(ErrUnsupported, r.place(), r.base+r.off-1, "type form %#x is not a function type (GC types are not supported)", form)
		}
		for range 2 { // parameters, results: one byte per value type
			k, err := r.count()
			if err != nil {
				return err
			}
			if err := r.skip(int(k)); err != nil {
				return err
			}
		}
		return nil
	})
}

// checkFunctions walks the function section: a type index per function.
func checkFunctions(r *reader) error {
	return r.vector(func() error { return r.skipLEB(32) })
}

// checkTables walks the table section: a reference type and limits each.
func checkTables(r *reader) error {
	return r.vector(func() error {
		if err := r.skipLEB(33); err != nil {
			return err
		}
		return skipLimits(r)
	})
}

// checkMemories walks the memory section: limits each.
func checkMemories(r *reader) error {
	return r.vector(func() error { return skipLimits(r) })
}

// checkData walks the data section: per segment, a mode, for active ones a
// memory and an offset expression, and the bytes.
func checkData(r *reader) error {
	return r.vector(func() error {
		flags, err := r.u32()
		if err != nil {
			return err
		}
		switch flags {
		case 0, 2: // active: (memory index,) offset
			if flags == 2 {
				if err := r.skipLEB(32); err != nil {
					return err
				}
			}
			if err := skipExpr(r); err != nil {
				return err
			}
		case 1: // passive
		default:
			return r.fail("data segment flags %d", flags)
		}
		size, err := r.count()
		if err != nil {
			return err
		}
		return r.skip(int(size))
	})
}

// skipLocals skips a function's local declarations, refusing more than
// maxLocals in all.
func skipLocals(r *reader, fn uint32) error {
	groups, err := r.count()
	if err != nil {
		return err
	}
	var total uint64
	for range groups {
		n, err := r.u32()
		if err != nil {
			return err
		}
		if total += uint64(n); total > maxLocals {
			return fmt.Errorf("%w: function %d declares more than %d locals", ErrUnsupported, fn, maxLocals)
		}
		if err := r.skipLEB(33); err != nil { // value type
			return err
		}
	}
	return nil
}
