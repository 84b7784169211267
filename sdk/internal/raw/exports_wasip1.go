//go:build wasip1

package raw

import (
	"fmt"
	"unsafe"

	"github.com/kubeplug/kubeplug/abi"
)

// The export names below must be literals; export_names_test.go checks them
// against package abi.

// abiVersion is the version marker: its name carries the ABI version this SDK
// speaks (abi.VersionExport). The host never calls it.
//
//go:wasmexport kubeplug_abi_version_1_5_0
func abiVersion() {}

// maxInput bounds one input so that a confused host gets 0 ("cannot
// allocate") instead of a trap from an impossible allocation.
const maxInput = 1 << 30

// in is the input region, lent to the host until the next malloc: the host
// writes every input into it while it fits (SPEC.md), so the hook copies each
// input out before decoding (the decoded request's strings share memory with
// the bytes they came from, and a module may keep a string past the call).
var in []byte

// malloc returns a guest region of at least size bytes for the host to write
// a hook's input into, or 0 when size is unreasonable.
//
//go:wasmexport kubeplug_malloc
func malloc(size uint32) uint32 {
	if size > maxInput {
		return 0
	}
	in = make([]byte, max(size, 1))
	return addr(in)
}

// manifest returns the packed region of the encoded manifest, or 0 when no
// module registered (the host then fails the load).
//
//go:wasmexport kubeplug_manifest
func manifest() uint64 {
	m := Manifest()
	if len(m) == 0 {
		WriteLog(abi.LogError, "no module registered: call sdk.Register from an init function of package main")
		return 0
	}
	return abi.PackPtrLen(addr(m), uint32(len(m)))
}

// onReconcile is the reconcile hook. The input must be the region malloc
// returned; anything else is refused rather than read through a raw pointer.
//
//go:wasmexport kubeplug_on_reconcile
func onReconcile(ptr, length uint32) uint64 { return hook(ptr, length, Reconcile) }

// onAdmit is the admit hook (ABI 1.1), under onReconcile's rules. A module
// that registers no admit handler answers StatusNoHook; the host never calls
// it then, as its manifest does not list the hook.
//
//go:wasmexport kubeplug_on_admit
func onAdmit(ptr, length uint32) uint64 { return hook(ptr, length, Admit) }

// hook checks the input region and runs dispatch on a copy of it.
func hook(ptr, length uint32, dispatch func([]byte) []byte) uint64 {
	var resp []byte
	if len(in) == 0 || ptr != addr(in) || int(length) > len(in) {
		resp = BadInput(fmt.Sprintf("input region (ptr %d, len %d) is not within the buffer kubeplug_malloc returned (ptr %d, size %d)", ptr, length, addrOrZero(in), len(in)))
	} else {
		resp = dispatch(copyInput(in[:length]))
	}
	afterCall()
	return abi.PackPtrLen(addr(resp), uint32(len(resp)))
}

func addrOrZero(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return addr(b)
}

// addr is the guest address of b's first byte; b must not be empty.
func addr(b []byte) uint32 {
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}
