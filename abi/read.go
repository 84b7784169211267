package abi

import (
	"errors"
	"unsafe"
)

// The short readers below decode the common short forms of MessagePack that
// make up most of a reconcile input (a fixstr key or string, a str8 string
// such as a UID, a fixmap or fixarray header, a positive fixint) and return
// errNotShort, having read nothing, for anything else. hack/gen-abi.sh
// rewrites each call of the generated decoders to msgp's reader (or to
// readStringBytes) into a call of the short reader first, and of msgp's
// reader only when the short one returned an error:
//
//	if z.Name, bts, err = readShortString(bts); err != nil {
//		z.Name, bts, err = readStringBytes(bts)
//	}
//
// The short readers call nothing, so the compiler inlines them (a call costs
// more as wasm than the few instructions of the short form; a reconcile input
// makes three to four reader calls per field it holds). The long form and
// every malformed message go through msgp as before, which reports the
// errors: a message decodes to the same values and fails with the same
// errors either way. BENCHMARKS.md, "Issue 26: guest decode", has the
// measurements.

// errNotShort is the short readers' answer to anything they leave to msgp.
// It never leaves the package: the generated code replaces it with the
// result of msgp's reader.
var errNotShort = errors.New("abi: not a short form")

// readShortKey is msgp.ReadMapKeyZC for a fixstr key: the key shares memory
// with b.
func readShortKey(b []byte) ([]byte, []byte, error) {
	if len(b) > 0 && b[0]&0xe0 == 0xa0 {
		if n := int(b[0]&0x1f) + 1; n <= len(b) {
			return b[1:n], b[n:], nil
		}
	}
	return nil, b, errNotShort
}

// readShortString is readStringBytes for a non-empty fixstr: the string
// shares memory with b, under readStringBytes's rule.
func readShortString(b []byte) (string, []byte, error) {
	if len(b) > 1 && b[0]&0xe0 == 0xa0 {
		if n := int(b[0]&0x1f) + 1; n > 1 && n <= len(b) {
			return unsafe.String(&b[1], n-1), b[n:], nil
		}
	}
	return "", b, errNotShort
}

// readShortMapHeader is msgp.ReadMapHeaderBytes for a fixmap.
func readShortMapHeader(b []byte) (uint32, []byte, error) {
	if len(b) > 0 && b[0]&0xf0 == 0x80 {
		return uint32(b[0] & 0x0f), b[1:], nil
	}
	return 0, b, errNotShort
}

// readShortArrayHeader is msgp.ReadArrayHeaderBytes for a fixarray.
func readShortArrayHeader(b []byte) (uint32, []byte, error) {
	if len(b) > 0 && b[0]&0xf0 == 0x90 {
		return uint32(b[0] & 0x0f), b[1:], nil
	}
	return 0, b, errNotShort
}
