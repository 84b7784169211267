package abi

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

// TestShortReadersAgreeWithMsgp: for every lead byte and every length of what
// follows it, a short reader followed (on errNotShort) by msgp's reader, as
// the generated code calls them, gives what msgp's reader alone gives: the
// same value, the same rest, the same error.
func TestShortReadersAgreeWithMsgp(t *testing.T) {
	type result struct {
		v    string
		rest []byte
		err  string
	}
	res := func(v any, rest []byte, err error) result {
		r := result{v: fmt.Sprint(v), rest: rest}
		if err != nil {
			r.err = err.Error()
		}
		return r
	}
	readers := []struct {
		name        string
		short, msgp func([]byte) result
	}{
		{"key",
			func(b []byte) result { v, o, err := readShortKey(b); return res(string(v), o, err) },
			func(b []byte) result { v, o, err := msgp.ReadMapKeyZC(b); return res(string(v), o, err) }},
		{"string",
			func(b []byte) result { v, o, err := readShortString(b); return res(v, o, err) },
			func(b []byte) result { v, o, err := readStringBytes(b); return res(v, o, err) }},
		{"map header",
			func(b []byte) result { v, o, err := readShortMapHeader(b); return res(v, o, err) },
			func(b []byte) result { v, o, err := msgp.ReadMapHeaderBytes(b); return res(v, o, err) }},
		{"array header",
			func(b []byte) result { v, o, err := readShortArrayHeader(b); return res(v, o, err) },
			func(b []byte) result { v, o, err := msgp.ReadArrayHeaderBytes(b); return res(v, o, err) }},
	}
	body := bytes.Repeat([]byte("abcdefgh"), 5)
	shortForms := 0
	for _, r := range readers {
		for lead := range 256 {
			for n := range len(body) {
				b := append([]byte{byte(lead)}, body[:n]...)
				want := r.msgp(b)
				got := r.short(b)
				if got.err == errNotShort.Error() {
					if !bytes.Equal(got.rest, b) {
						t.Fatalf("%s of % x: short reader consumed bytes and gave up", r.name, b)
					}
					got = r.msgp(b)
				} else {
					shortForms++
				}
				if got.v != want.v || !bytes.Equal(got.rest, want.rest) || got.err != want.err {
					t.Fatalf("%s of % x: got %q, rest % x, err %q; msgp gives %q, rest % x, err %q",
						r.name, b, got.v, got.rest, got.err, want.v, want.rest, want.err)
				}
			}
		}
	}
	if shortForms == 0 {
		t.Fatal("no input took a short reader's path")
	}
}
