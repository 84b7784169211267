// Package fixed is the ABI plumbing of the hostile guests that answer every
// reconcile with the same bytes, written by hand where the SDK cannot
// produce them (an action with no field at all, a requeue that does not fit
// a time.Duration, more actions than the SDK's output would hold).
package fixed

import (
	"unsafe"

	"github.com/kubeplug/kubeplug/abi"
)

var in, manifestBytes, response []byte

// Answer makes the guest declare m and answer every reconcile with the
// encoded Response resp. Call it from the guest's init.
func Answer(m abi.Manifest, resp []byte) {
	// The marker below is ABI 1.0's: these guests stay 1.0 modules, which
	// a 1.1 host must keep running unchanged.
	m.ABIVersion = "1.0.0"
	b, err := m.MarshalMsg(nil)
	if err != nil {
		panic(err)
	}
	manifestBytes, response = b, resp
}

// ResultHead is the start of an encoded {"status": 0, "result": {"actions":
// [...]}} holding n actions: the actions' encodings follow it.
func ResultHead(n uint32) []byte {
	b := []byte{0x82, 0xa6, 's', 't', 'a', 't', 'u', 's', 0x00,
		0xa6, 'r', 'e', 's', 'u', 'l', 't', 0x81, 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's', 0xdd}
	return append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

//go:wasmexport kubeplug_abi_version_1_0_0
func abiVersion() {}

//go:wasmexport kubeplug_malloc
func malloc(size uint32) uint32 {
	in = make([]byte, max(size, 1))
	return addr(in)
}

//go:wasmexport kubeplug_manifest
func manifest() uint64 { return abi.PackPtrLen(addr(manifestBytes), uint32(len(manifestBytes))) }

//go:wasmexport kubeplug_on_reconcile
func onReconcile(ptr, length uint32) uint64 {
	return abi.PackPtrLen(addr(response), uint32(len(response)))
}

func addr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }
