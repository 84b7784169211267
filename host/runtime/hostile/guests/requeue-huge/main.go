package main

import (
	"unsafe"

	"github.com/kubeplug/kubeplug/abi"
)

//go:wasmexport kubeplug_abi_version_1_0_0
func abiVersion() {}

var in, manifestBytes, response []byte

func init() {
	m := abi.Manifest{
		Name:        "requeue-huge",
		Version:     "0.1.0",
		ABIVersion:  abi.Current.String(),
		Subject:     abi.SubjectStatefulSet,
		Hooks:       []string{abi.HookReconcile},
		Description: "Asks for a requeue after 2^62 ms on every call.",
	}
	var err error
	if manifestBytes, err = m.MarshalMsg(nil); err != nil {
		panic(err)
	}
	r := abi.Response{Status: abi.StatusOK, Result: &abi.Result{RequeueAfterMillis: 1 << 62}}
	if response, err = r.MarshalMsg(nil); err != nil {
		panic(err)
	}
}

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

func main() {}
