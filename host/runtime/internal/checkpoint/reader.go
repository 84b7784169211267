package checkpoint

import "fmt"

// reader decodes the primitive encodings of the binary format from one
// section. Every method fails with ErrMalformed, naming where and the byte
// offset in the whole module.
type reader struct {
	b     []byte
	off   int    // next byte to read, within b
	base  int    // offset of b[0] in the module, for errors
	where string // what is being read, for errors
	// fn, when not -1, is the function whose code is being read: errors say
	// "<where> <fn>" (formatted only on failure, not once per function).
	fn int64
}

func newReader(b []byte, base int, where string) *reader {
	return &reader{b: b, base: base, where: where, fn: -1}
}

func (r *reader) done() bool { return r.off >= len(r.b) }

func (r *reader) fail(format string, args ...any) error {
	return at(ErrMalformed, r.place(), r.base+r.off, format, args...)
}

// place is where, with the function's index when there is one.
func (r *reader) place() string {
	if r.fn < 0 {
		return r.where
	}
	return fmt.Sprintf("%s %d", r.where, r.fn)
}

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, r.eof()
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) eof() error { return r.fail("unexpected end") }

// uleb reads an unsigned LEB128 of at most bits bits.
func (r *reader) uleb(bits uint) (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if shift >= bits || (bits-shift < 7 && c&0x7f>>(bits-shift) != 0) {
			return 0, r.fail("integer too large for %d bits", bits)
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
}

// s33 reads a signed LEB128 of at most 33 bits (a block type).
func (r *reader) s33() (int64, error) {
	var v int64
	for shift := uint(0); ; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if shift >= 33 {
			return 0, r.fail("integer too large for 33 bits")
		}
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			if shift+7 < 64 && c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v, nil
		}
	}
}

func (r *reader) u32() (uint32, error) {
	v, err := r.uleb(32)
	return uint32(v), err
}

// count reads the length of a vector whose elements take at least one byte
// each, and refuses a length the bytes left cannot hold. Decoders (wazero's
// among them) allocate a vector before reading its elements: checked here
// first, a few bytes cannot make the host allocate gigabytes.
func (r *reader) count() (uint32, error) {
	at := r.off
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if left := len(r.b) - r.off; int64(n) > int64(left) {
		r.off = at
		return 0, r.fail("a vector of %d elements in %d bytes", n, left)
	}
	return n, nil
}

// vector reads a vector's length, calls elem once per element, and fails
// unless the elements used every byte that was left.
func (r *reader) vector(elem func() error) error {
	n, err := r.count()
	if err != nil {
		return err
	}
	for range n {
		if err := elem(); err != nil {
			return err
		}
	}
	return r.end()
}

// end fails unless every byte was read.
func (r *reader) end() error {
	if !r.done() {
		return r.fail("%d bytes after the last entry", len(r.b)-r.off)
	}
	return nil
}

// skipLEB skips a signed or unsigned LEB128 of at most bits bits; the value
// is not needed, only its length.
func (r *reader) skipLEB(bits uint) error {
	if r.off < len(r.b) && r.b[r.off] < 0x80 { // most immediates: one byte
		r.off++
		return nil
	}
	return r.skipLongLEB(bits)
}

func (r *reader) skipLongLEB(bits uint) error {
	for n := uint(0); ; n += 7 {
		c, err := r.byte()
		if err != nil {
			return err
		}
		if n >= bits {
			return r.fail("integer too long for %d bits", bits)
		}
		if c&0x80 == 0 {
			return nil
		}
	}
}

func (r *reader) skip(n int) error {
	if n < 0 || len(r.b)-r.off < n {
		return r.fail("%d bytes run past the end", n)
	}
	r.off += n
	return nil
}

func (r *reader) bytes(n uint32) ([]byte, error) {
	start := r.off
	if err := r.skip(int(n)); err != nil {
		return nil, err
	}
	return r.b[start:r.off], nil
}

func (r *reader) name() (string, error) {
	n, err := r.count()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(n)
	return string(b), err
}

// rest returns the unread bytes.
func (r *reader) rest() []byte {
	b := r.b[r.off:]
	r.off = len(r.b)
	return b
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendName(b []byte, s string) []byte {
	return append(appendULEB(b, uint64(len(s))), s...)
}
