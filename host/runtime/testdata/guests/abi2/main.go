// Command abi2 claims a future ABI major version; the host must refuse it
// before running any of its code.
package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/testdata/guests/internal/raw"
)

func main() {}

//go:wasmexport kubeplug_abi_version_2_0_0
func version() {}

//go:wasmexport kubeplug_malloc
func malloc(size uint32) uint32 { return raw.Malloc(size) }

//go:wasmexport kubeplug_manifest
func manifest() uint64 {
	return raw.Manifest(&abi.Manifest{
		Name: "abi2", Version: "2.0.0", ABIVersion: "2.0.0",
		Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile},
	})
}

//go:wasmexport kubeplug_on_reconcile
func reconcile(ptr, n uint32) uint64 { return raw.Respond(&abi.Response{Result: &abi.Result{}}) }
