// Command noreconcile declares the reconcile hook in its manifest but does not
// export kubeplug_on_reconcile.
package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/testdata/guests/internal/raw"
)

func main() {}

//go:wasmexport kubeplug_abi_version_1_0_0
func version() {}

//go:wasmexport kubeplug_malloc
func malloc(size uint32) uint32 { return raw.Malloc(size) }

//go:wasmexport kubeplug_manifest
func manifest() uint64 {
	return raw.Manifest(&abi.Manifest{
		Name: "noreconcile", Version: "0.1.0", ABIVersion: "1.0.0",
		Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile},
	})
}
