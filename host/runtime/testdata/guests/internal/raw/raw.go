// Package raw is the hand-written guest side of the kubeplug ABI shared by the
// runtime's test guests. It deliberately does not use the sdk: the runtime's
// tests must not depend on it, and adversarial guests need to break the rules
// the sdk would enforce. Each guest declares its own exports, so that a guest
// can leave one out or get one wrong.
package raw

import (
	"unsafe"

	"github.com/kubeplug/kubeplug/abi"
)

// in is the region handed to the host by Malloc; out holds the last encoded
// message so that it stays alive until the host has copied it.
var in, out []byte

// Malloc returns a region of at least size bytes that stays valid until the
// next call.
func Malloc(size uint32) uint32 {
	if size == 0 {
		size = 1
	}
	if uint32(cap(in)) < size {
		in = make([]byte, size)
	}
	in = in[:size]
	return Ptr(in)
}

// Input returns the region [ptr, ptr+n) of the guest's memory.
func Input(ptr, n uint32) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n)
}

// Ptr returns the address of b's first byte in linear memory.
func Ptr(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

// Keep returns b packed as a region and keeps it alive until the next call.
func Keep(b []byte) uint64 {
	out = b
	return abi.PackPtrLen(Ptr(b), uint32(len(b)))
}

// Manifest encodes m and returns it packed.
func Manifest(m *abi.Manifest) uint64 {
	b, err := m.MarshalMsg(out[:0])
	if err != nil {
		panic(err)
	}
	return Keep(b)
}

// Respond encodes r and returns it packed.
func Respond(r *abi.Response) uint64 {
	b, err := r.MarshalMsg(out[:0])
	if err != nil {
		panic(err)
	}
	return Keep(b)
}

// req is the decoded request, reused across calls.
var req abi.ReconcileRequest

// Request decodes the request in [ptr, ptr+n). The result, and the strings
// in it, are valid until the call returns.
//
// It decodes into a reused value with UnmarshalMsg rather than through
// abi.DecodeReconcileRequest: the decode function's well-formedness pre-pass
// and allocation were most of an empty call's cost. The host is trusted to
// send one well-formed message.
func Request(ptr, n uint32) (*abi.ReconcileRequest, error) {
	req = abi.ReconcileRequest{}
	if _, err := req.UnmarshalMsg(Input(ptr, n)); err != nil {
		return nil, err
	}
	return &req, nil
}

// empty is the answer with no actions.
var empty = abi.Response{Result: &abi.Result{}}

// Empty answers with no actions.
func Empty() uint64 { return Respond(&empty) }

//go:wasmimport kubeplug kubeplug_write_log
func writeLog(level, ptr, n uint32)

// Log writes msg to the host log at level.
func Log(level uint32, msg string) {
	b := []byte(msg)
	writeLog(level, Ptr(b), uint32(len(b)))
}
