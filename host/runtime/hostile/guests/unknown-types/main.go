package main

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/kubeplug/kubeplug/abi"
)

const types = 40_000

//go:wasmexport kubeplug_abi_version_1_0_0
func abiVersion() {}

var in, manifestBytes, response []byte

func init() {
	m := abi.Manifest{
		Name:         "unknown-types",
		Version:      "0.1.0",
		ABIVersion:   abi.Current.String(),
		Subject:      abi.SubjectStatefulSet,
		Hooks:        []string{abi.HookReconcile},
		Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
		Description:  "Returns 40,000 actions of distinct unknown types.",
	}
	var err error
	if manifestBytes, err = m.MarshalMsg(nil); err != nil {
		panic(err)
	}
	// {"status": 0, "result": {"actions": [{"type": "u00000"}, ...]}}
	response = append(response, 0x82, 0xa6, 's', 't', 'a', 't', 'u', 's', 0x00,
		0xa6, 'r', 'e', 's', 'u', 'l', 't', 0x81, 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's',
		0xdd)
	response = binary.BigEndian.AppendUint32(response, types)
	for i := range types {
		t := fmt.Sprintf("u%05d", i)
		response = append(response, 0x81, 0xa4, 't', 'y', 'p', 'e', 0xa0|byte(len(t)))
		response = append(response, t...)
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
