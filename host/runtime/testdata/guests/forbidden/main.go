// Command forbidden imports a function from a module the host does not
// provide ("env"); the host must refuse it.
package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/testdata/guests/internal/raw"
)

func main() {}

//go:wasmimport env open_socket
func openSocket(port uint32) uint32

//go:wasmexport kubeplug_abi_version_1_0_0
func version() {}

//go:wasmexport kubeplug_malloc
func malloc(size uint32) uint32 { return raw.Malloc(size) }

//go:wasmexport kubeplug_manifest
func manifest() uint64 {
	return raw.Manifest(&abi.Manifest{
		Name: "forbidden", Version: "0.1.0", ABIVersion: "1.0.0",
		Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile},
	})
}

//go:wasmexport kubeplug_on_reconcile
func reconcile(ptr, n uint32) uint64 {
	openSocket(443)
	return raw.Respond(&abi.Response{Result: &abi.Result{}})
}
