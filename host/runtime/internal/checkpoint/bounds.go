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

// checkFunctions walks the function section: a type index per function. It
// returns how many functions the section declares and the largest type
// index it names plus one.
func checkFunctions(r *reader) (n, types uint32, err error) {
	err = r.vector(func() error {
		t, err := r.u32()
		n, types = n+1, max(types, t+1)
		return err
	})
	return n, types, err
}

// tables walks the table section and rewrites each table's limits so that
// all of them together never hold more than Limits.TableElements: a module
// whose minimum sizes exceed it is refused; the room left (the limit minus
// the minimums) goes to the tables in order, each up to its declared
// maximum, so that the maximums add up to at most the limit and table.grow
// beyond them returns -1. The first table, the one languages grow (C's and
// Rust's indirect function table), gets the room first.
func (m *module) tables(r *reader) ([]byte, error) {
	type table struct {
		refType  []byte
		min, max uint64
		hasMax   bool
		at       int
	}
	var ts []table
	err := r.vector(func() error {
		start := r.off
		if err := r.skipLEB(33); err != nil {
			return err
		}
		t := table{refType: r.b[start:r.off], at: r.base + start}
		flags, err := r.byte()
		if err != nil {
			return err
		}
		if flags > 1 {
			return r.fail("table limits flags %#x (64-bit and shared tables are not supported)", flags)
		}
		if t.min, err = r.uleb(32); err != nil {
			return err
		}
		if t.hasMax = flags == 1; t.hasMax {
			if t.max, err = r.uleb(32); err != nil {
				return err
			}
		}
		ts = append(ts, t)
		return nil
	})
	if err != nil || m.limits.TableElements == 0 {
		return r.b, err
	}
	limit := uint64(m.limits.TableElements)
	var total uint64
	for _, t := range ts {
		total += t.min
	}
	if total > limit {
		if len(ts) == 1 {
			return nil, fmt.Errorf("%w: table of %d elements exceeds the limit of %d", ErrTableLimit, total, limit)
		}
		return nil, fmt.Errorf("%w: %d tables of %d elements in all exceed the limit of %d", ErrTableLimit, len(ts), total, limit)
	}
	room := limit - total
	out := appendULEB(nil, uint64(len(ts)))
	for _, t := range ts {
		hi := t.min + room
		if t.hasMax && t.max >= t.min {
			hi = min(hi, t.max)
		}
		room -= hi - t.min
		out = append(out, t.refType...)
		out = append(out, 1)
		out = appendULEB(out, t.min)
		out = appendULEB(out, hi)
	}
	return out, nil
}

// checkMemories walks the memory section: limits each.
func checkMemories(r *reader) error {
	return r.vector(func() error { return skipLimits(r) })
}

// checkData walks the data section: per segment, a mode, for active ones a
// memory and an offset expression, and the bytes.
func checkData(r *reader, p *plan) error {
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
			if _, err := p.rewrite(r, nil, false); err != nil { // checks the indices it names
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
