package runtime_test

import (
	"github.com/kubeplug/kubeplug/abi"
	wb "github.com/kubeplug/kubeplug/host/runtime/internal/wasmbuild"
)

// Memory layout of rawGuest's single 64 KiB page.
const (
	rawManifestAt = 1024
	rawResponseAt = 8192
	rawInputAt    = 16384 // kubeplug_malloc always returns this
)

// rawManifest is the raw guest's manifest; tests vary it.
func rawManifest() *abi.Manifest {
	return &abi.Manifest{
		Name: "raw", Version: "0.0.1", ABIVersion: abi.Current.String(),
		Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile},
	}
}

func encode(m interface{ MarshalMsg([]byte) ([]byte, error) }) []byte {
	b, err := m.MarshalMsg(nil)
	if err != nil {
		panic(err)
	}
	return b
}

// rawGuest is a complete guest with no language runtime: its manifest and its
// one answer (an empty result) sit in data segments. It measures the host's
// own cost of a call, and with reconcile set it misbehaves at the wasm level.
func rawGuest(reconcile []byte) wb.Module { return rawGuestWith(encode(rawManifest()), reconcile) }

// rawGuestWith is rawGuest with the given encoded manifest.
func rawGuestWith(manifest, reconcile []byte) wb.Module {
	resp := encode(&abi.Response{Result: &abi.Result{}})
	if reconcile == nil {
		reconcile = wb.I64Const(abi.PackPtrLen(rawResponseAt, uint32(len(resp))))
	}
	return wb.Module{
		Funcs: []wb.Func{
			{Export: abi.ExportInitialize},
			{Export: abi.VersionExport},
			{Export: abi.ExportMalloc, Params: []byte{wb.I32}, Results: []byte{wb.I32}, Body: wb.I32Const(rawInputAt)},
			{Export: abi.ExportManifest, Results: []byte{wb.I64}, Body: wb.I64Const(abi.PackPtrLen(rawManifestAt, uint32(len(manifest))))},
			{Export: abi.ExportReconcile, Params: []byte{wb.I32, wb.I32}, Results: []byte{wb.I64}, Body: reconcile},
		},
		Data: []wb.Data{{Offset: rawManifestAt, Bytes: manifest}, {Offset: rawResponseAt, Bytes: resp}},
	}
}

// infiniteLoop is a function body that never returns: loop br 0 end, then
// unreachable to satisfy the result type.
var infiniteLoop = []byte{wb.OpLoop, wb.BlockEmpty, wb.OpBr, 0x00, wb.OpEnd, wb.OpUnreachable}

// rawFanout is the index fanoutFunc gets when added to the raw guest: it
// calls itself twice with n-1 down to zero, 2^(n+1)-1 calls without a single
// loop.
const rawFanout = 5

var fanoutFunc = wb.Func{Params: []byte{wb.I32}, Results: []byte{wb.I32}, Body: wb.Cat(
	wb.Op(wb.OpLocalGet, 0), []byte{wb.OpI32Eqz, wb.OpIf, wb.BlockEmpty}, wb.I32Const(0), []byte{wb.OpReturn, wb.OpEnd},
	wb.Op(wb.OpLocalGet, 0), wb.I32Const(1), []byte{wb.OpI32Sub}, wb.Op(wb.OpCall, rawFanout), []byte{wb.OpDrop},
	wb.Op(wb.OpLocalGet, 0), wb.I32Const(1), []byte{wb.OpI32Sub}, wb.Op(wb.OpCall, rawFanout), []byte{wb.OpDrop},
	wb.I32Const(1),
)}

// fanout is a reconcile body that calls fanout(depth), then answers nothing.
func fanout(depth int32) []byte {
	return wb.Cat(wb.I32Const(depth), wb.Op(wb.OpCall, rawFanout), []byte{wb.OpDrop}, wb.I64Const(0))
}
