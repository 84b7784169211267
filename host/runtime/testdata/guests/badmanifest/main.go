// Command badmanifest is a well-formed module whose manifest asks for an
// action type the ABI does not know. (The runtime's tests cover the other
// manifest checks with modules written in raw WebAssembly, which compile in
// milliseconds.)
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
		Name: "badmanifest", Version: "0.1.0", ABIVersion: "1.0.0",
		Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile},
		Capabilities: []abi.Capability{
			{Action: abi.ActionEvent, Resources: []string{"statefulsets"}},
			{Action: "execShell", Resources: []string{"pods"}},
		},
	})
}

//go:wasmexport kubeplug_on_reconcile
func reconcile(ptr, n uint32) uint64 { return raw.Respond(&abi.Response{Result: &abi.Result{}}) }
