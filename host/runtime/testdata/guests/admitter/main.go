// Command admitter is the runtime tests' ABI 1.1 guest: it has both hooks,
// and the name of an admission request (or of a reconcile's key) selects
// what one call does, well-behaved or hostile.
package main

import (
	"strings"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/testdata/guests/internal/raw"
)

func main() {}

//go:wasmexport kubeplug_abi_version_1_1_0
func version() {}

//go:wasmexport kubeplug_malloc
func malloc(size uint32) uint32 { return raw.Malloc(size) }

//go:wasmexport kubeplug_manifest
func manifest() uint64 {
	return raw.Manifest(&abi.Manifest{
		Name:       "admitter",
		Version:    "0.1.0",
		ABIVersion: "1.1.0",
		Subject:    abi.SubjectStatefulSet,
		Hooks:      []string{abi.HookReconcile, abi.HookAdmit},
		Capabilities: []abi.Capability{
			{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}, Paths: []string{"/metadata/labels"}},
		},
		Admission: &abi.Admission{Mutates: true, Rules: []abi.AdmissionRule{{
			Operations: []string{abi.OperationCreate}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims"},
		}}},
	})
}

//go:wasmexport kubeplug_on_reconcile
func reconcile(ptr, n uint32) uint64 {
	req, err := raw.Request(ptr, n)
	if err != nil {
		return raw.Respond(&abi.Response{Status: abi.StatusBadInput, Message: err.Error()})
	}
	if strings.HasSuffix(req.Key, "/loop") {
		for {
		}
	}
	if strings.HasSuffix(req.Key, "/admit-answer") {
		return raw.Respond(&abi.Response{Admit: &abi.AdmitResponse{Allowed: true}})
	}
	return raw.Empty()
}

//go:wasmexport kubeplug_on_admit
func admit(ptr, n uint32) uint64 {
	req, err := abi.DecodeAdmitRequest(raw.Input(ptr, n))
	if err != nil {
		return raw.Respond(&abi.Response{Status: abi.StatusBadInput, Message: err.Error()})
	}
	switch req.Name {
	case "allow":
		return raw.Respond(&abi.Response{Admit: &abi.AdmitResponse{Allowed: true, Warnings: []string{"saw " + req.Operation}}})
	case "deny":
		return raw.Respond(&abi.Response{Admit: &abi.AdmitResponse{Message: "denied " + req.Namespace + "/" + req.Name, Code: 422}})
	case "patch":
		return raw.Respond(&abi.Response{Admit: &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{
			{Op: abi.PatchAdd, Path: "/metadata/labels/tier", Value: []byte(`"gold"`)},
		}}})
	case "manyops":
		ops := make([]abi.PatchOperation, 5000)
		for i := range ops {
			ops[i] = abi.PatchOperation{Op: abi.PatchRemove, Path: "/a"}
		}
		return raw.Respond(&abi.Response{Admit: &abi.AdmitResponse{Allowed: true, Patch: ops}})
	case "oversize":
		// strings.Repeat fills by doubling copies: a few memmoves, so that
		// the call meets its deadline on a loaded machine and fails for its
		// size, not its time.
		big := []byte(strings.Repeat("x", 2<<20))
		return raw.Respond(&abi.Response{Admit: &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{
			{Op: abi.PatchAdd, Path: "/metadata/labels/big", Value: append(append([]byte{'"'}, big...), '"')},
		}}})
	case "badpatch":
		return raw.Respond(&abi.Response{Admit: &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{
			{Op: abi.PatchRemove, Path: "/metadata/labels/nope"},
		}}})
	case "badutf8":
		return raw.Respond(&abi.Response{Admit: &abi.AdmitResponse{Message: "\xff\xfe"}})
	case "result":
		return raw.Respond(&abi.Response{Result: &abi.Result{}})
	case "noanswer":
		return raw.Respond(&abi.Response{})
	case "loop":
		for {
		}
	case "garbage":
		return raw.Keep([]byte{0xc1, 0xc1, 0xc1})
	case "trap":
		var p *abi.Response
		return uint64(p.Status)
	case "objects":
		// Echoes what the request carried, for the tests to check.
		msg := req.Object.Kind + " " + req.Object.PersistentVolumeClaim.Metadata.Name + " " + string(req.Object.JSON)
		if req.StatefulSet != nil {
			msg += " set=" + req.StatefulSet.Set.Metadata.Name
		}
		return raw.Respond(&abi.Response{Admit: &abi.AdmitResponse{Allowed: true, Message: msg}})
	}
	return raw.Respond(&abi.Response{Admit: &abi.AdmitResponse{Allowed: true}})
}
