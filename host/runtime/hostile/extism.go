package hostile

import (
	"encoding/json"
	"strings"

	"github.com/kubeplug/kubeplug/abi"
	wb "github.com/kubeplug/kubeplug/host/runtime/internal/wasmbuild"
)

// Extism returns one raw-wasm Extism plugin (SPEC.md, "The Extism profile")
// per way a plugin can attack the host through the Extism path: it imports
// Extism's kernel functions, exports kubeplug_manifest (a real JSON
// manifest) and reconcile, and does its harm in reconcile or by what it
// imports. They are written byte by byte, so that each does exactly one
// thing.
func Extism() []Module {
	i64 := wb.I64
	// alloc 64 KiB in the kernel's memory until it returns 0, then trap.
	kernelBomb := wb.Cat([]byte{wb.OpLoop, wb.BlockEmpty}, wb.I64Const(64<<10), wb.Op(wb.OpCall, extAlloc),
		[]byte{0x50, wb.OpIf, wb.BlockEmpty, wb.OpUnreachable, wb.OpEnd}, // i64.eqz
		wb.Op(wb.OpBr, 0), []byte{wb.OpEnd, wb.OpUnreachable})
	return []Module{
		{
			Class: "extism-loop", Stage: StageCall, Want: "deadline exceeded after",
			Wasm: extismShape{hook: wb.Cat([]byte{wb.OpLoop, wb.BlockEmpty}, wb.Op(wb.OpBr, 0), []byte{wb.OpEnd, wb.OpUnreachable})}.bytes(),
		},
		{
			// Reads the input's first 8 bytes, for ever: small kernel calls
			// read the clock one time in 64, and the deadline still ends
			// the call.
			Class: "extism-kernel-call-loop", Stage: StageCall, Want: "deadline exceeded after",
			Wasm: extismShape{
				imports: []wb.Import{{Module: extismEnv, Name: "input_load_u64", Params: []byte{i64}, Results: []byte{i64}}},
				hook: wb.Cat([]byte{wb.OpLoop, wb.BlockEmpty}, wb.I64Const(0), wb.Op(wb.OpCall, 4), []byte{0x1a}, // drop
					wb.Op(wb.OpBr, 0), []byte{wb.OpEnd, wb.OpUnreachable}),
			}.bytes(),
		},
		{
			// Grows its own memory one page at a time, touching each, to the
			// cap and on.
			Class: "extism-memory-grow", Stage: StageCall, Want: "out of memory at the",
			Wasm: extismShape{hook: wb.Cat(
				[]byte{wb.OpLoop, wb.BlockEmpty},
				wb.I32Const(1), []byte{0x40, 0}, wb.Op(wb.OpLocalTee, 0), // memory.grow 1
				wb.I32Const(-1), []byte{0x46, wb.OpIf, wb.BlockEmpty, wb.OpUnreachable, wb.OpEnd}, // at the cap
				wb.Op(wb.OpLocalGet, 0), wb.I32Const(16), []byte{0x74}, wb.I32Const(1), []byte{0x36, 2, 0}, // store 1 at old<<16
				wb.Op(wb.OpBr, 0), []byte{wb.OpEnd, wb.OpUnreachable},
			)}.bytes(),
		},
		{
			// Allocates in the kernel's memory, which the host reads the
			// output from, until the kernel cannot.
			Class: "extism-kernel-alloc", Stage: StageCall, Want: "out of memory at the",
			Wasm: extismShape{hook: kernelBomb}.bytes(),
		},
		{
			// A WASI plugin whose _initialize never returns: go-sdk runs it
			// before the first call (kubeplug_manifest, at load), under that
			// call's deadline.
			Class: "extism-initialize-loop", Stage: StageLoad, Want: "kubeplug_manifest: deadline exceeded after",
			Wasm: extismShape{
				initialize: wb.Cat([]byte{wb.OpLoop, wb.BlockEmpty}, wb.Op(wb.OpBr, 0), []byte{wb.OpEnd}),
				response:   []byte(`{"status":0}`),
			}.bytes(),
		},
		{
			Class: "extism-output-huge", Stage: StageCall, Want: "larger than the 1 MiB limit",
			Wasm: extismShape{hook: wb.Cat(
				wb.I64Const(2<<20), wb.Op(wb.OpCall, extAlloc), wb.I64Const(2<<20), wb.Op(wb.OpCall, extOutputSet), wb.I32Const(0),
			)}.bytes(),
		},
		{
			// log_info on a fresh 24 MiB block, for ever: the host would
			// copy each block whole to log it. It reads at most the log
			// limit of each, and charges the blocks to the call's
			// host-work budget, which the eleventh exceeds.
			Class: "extism-log-huge", Stage: StageCall, Want: "host call alloc refused: the call's host functions would move more than the budget of 256 MiB per call",
			Wasm: ExtismLogHuge(-1),
		},
		{
			// error_set on a 16 MiB block: the host would copy it whole as
			// the call's error message.
			Class: "extism-error-block-huge", Stage: StageCall, Want: "host call error_set refused: an error message of 16777216 bytes is larger than the 1 MiB limit",
			Wasm: extismShape{
				imports: []wb.Import{{Module: extismEnv, Name: "error_set", Params: []byte{i64}}},
				hook:    wb.Cat(wb.I64Const(16<<20), wb.Op(wb.OpCall, extAlloc), wb.Op(wb.OpCall, 4), wb.I32Const(1)),
			}.bytes(),
		},
		{
			// WASI's poll_oneoff over 300,000 subscriptions, for ever, inside
			// go-sdk's runtime.
			Class: "extism-wasi-poll-subscriptions", Stage: StageCall, Want: "host call poll_oneoff refused: 300000 subscriptions, more than the per-call limit of 1024",
			Wasm: extismShape{
				imports: []wb.Import{{Module: abi.WASIModule, Name: "poll_oneoff", Params: []byte{wb.I32, wb.I32, wb.I32, wb.I32}, Results: []byte{wb.I32}}},
				pages:   (hugeIOVecsAt+80*manySubscriptions+8)>>16 + 1,
				hook: wb.Cat([]byte{wb.OpLoop, wb.BlockEmpty},
					wb.I32Const(hugeIOVecsAt), wb.I32Const(hugeIOVecsAt+48*manySubscriptions), wb.I32Const(manySubscriptions),
					wb.I32Const(hugeIOVecsAt+80*manySubscriptions), wb.Op(wb.OpCall, 4), []byte{wb.OpDrop},
					wb.Op(wb.OpBr, 0), []byte{wb.OpEnd, wb.OpUnreachable}),
			}.bytes(),
		},
		{
			Class: "extism-garbage", Stage: StageCall, Want: "invalid UTF-8",
			Wasm: extismShape{response: []byte("\xff\xfe not JSON \x00\x01")}.bytes(),
		},
		{
			Class: "extism-not-json", Stage: StageCall, Want: "output: invalid character",
			Wasm: extismShape{response: []byte(`{"status": 0, "result": nope}`)}.bytes(),
		},
		{
			// 5,000 empty actions: more than the default limit of 4,096,
			// refused before anything is decoded.
			Class: "extism-actions-flood", Stage: StageCall, Want: "actions, the limit",
			Wasm: extismShape{response: []byte(`{"status":0,"result":{"actions":[` + strings.Repeat("{},", 4999) + `{}]}}`)}.bytes(),
		},
		{
			// Fails with an error message (the PDK's error_set) that is not
			// UTF-8: refused as a Response.Message would be.
			Class: "extism-error-garbage", Stage: StageCall, Want: "error message: invalid UTF-8",
			Wasm: extismShape{errorMessage: []byte("\xff\xfe failed")}.bytes(),
		},
		{
			// Fails with an error message of 100 KiB, past the bound on
			// every string of an output.
			Class: "extism-error-huge", Stage: StageCall, Want: "error message: a string of 102400 bytes, more than the limit",
			Wasm: extismShape{errorMessage: []byte(strings.Repeat("x", 100<<10))}.bytes(),
		},
		{
			Class: "extism-http", Stage: StageLoad, Want: "imports extism:host/env.http_request, which kubeplug does not provide",
			Wasm: extismShape{imports: []wb.Import{{Module: extismEnv, Name: "http_request", Params: []byte{i64, i64}, Results: []byte{i64}}}, hook: wb.I32Const(0)}.bytes(),
		},
		{
			Class: "extism-var-set", Stage: StageLoad, Want: "imports extism:host/env.var_set, which kubeplug does not provide",
			Wasm: extismShape{imports: []wb.Import{{Module: extismEnv, Name: "var_set", Params: []byte{i64, i64}}}, hook: wb.I32Const(0)}.bytes(),
		},
		{
			Class: "extism-config-get", Stage: StageLoad, Want: "imports extism:host/env.config_get, which kubeplug does not provide",
			Wasm: extismShape{imports: []wb.Import{{Module: extismEnv, Name: "config_get", Params: []byte{i64}, Results: []byte{i64}}}, hook: wb.I32Const(0)}.bytes(),
		},
		{
			Class: "extism-reserved-import", Stage: StageLoad, Want: `"kubeplug:runtime" is reserved for the host`,
			Wasm: extismShape{imports: []wb.Import{{Module: "kubeplug:runtime", Name: "checkpoint", Results: []byte{wb.I32}}}, hook: wb.I32Const(0)}.bytes(),
		},
	}
}

const extismEnv = "extism:host/env"

// The imports every plugin of the corpus has, by function index.
const (
	extAlloc     = 0 // (i64) -> i64
	extStoreU8   = 1 // (i64, i32) -> ()
	extOutputSet = 2 // (i64, i64) -> ()
	extStoreU64  = 3 // (i64, i64) -> ()
)

// responseAt is where a fixed response sits in the plugin's memory; the
// manifest sits at 0.
const extismResponseAt = 1 << 16

// extismLogAt is where a plugin's log message sits, between the two.
const extismLogAt = 1 << 15

// extismShape is a plugin of the corpus.
type extismShape struct {
	// imports are more imports, after the three every plugin has.
	imports []wb.Import
	// hook is reconcile's body: () -> i32, with one i32 local.
	hook []byte
	// response, when set, is what reconcile outputs (hook is then ignored).
	response []byte
	// spin is how many loop iterations reconcile runs before it outputs
	// response.
	spin int32
	// spinBody, when set, runs at each of those iterations.
	spinBody []byte
	// encoding is the manifest's encoding; empty leaves it out (JSON).
	encoding string
	// manifest, when set, is what kubeplug_manifest outputs instead.
	manifest []byte
	// initialize, when set, is the body of an exported _initialize, and the
	// plugin imports WASI (go-sdk calls _initialize only then).
	initialize []byte
	// logs, when set, is a message reconcile logs with log_info logTimes
	// times before it answers.
	logs     []byte
	logTimes int32
	// admit, when set, gives the plugin the admit hook too (and the
	// manifest its admission and a mutate capability on claims' labels):
	// it logs its input with log_info, then outputs admit.
	admit []byte
	// admitLoops makes the admit hook loop forever instead.
	admitLoops bool
	// pages, when larger, is the plugin's memory in pages.
	pages uint32
	// errorMessage, when set, makes reconcile set it as the call's error
	// (the PDK's error_set) and return 1 (hook and response are then
	// ignored).
	errorMessage []byte
}

func (s extismShape) bytes() []byte {
	manifest := abi.Manifest{
		Name:       "hostile",
		Version:    "0.0.1",
		ABIVersion: abi.Current.String(),
		Subject:    abi.SubjectStatefulSet,
		Hooks:      []string{abi.HookReconcile},
	}
	admits := s.admit != nil || s.admitLoops
	if admits {
		manifest.Hooks = append(manifest.Hooks, abi.HookAdmit)
		manifest.Admission = &abi.Admission{Mutates: true, Rules: []abi.AdmissionRule{{
			Operations: []string{abi.OperationCreate}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims"},
		}}}
		manifest.Capabilities = []abi.Capability{{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}, Paths: []string{"/metadata/labels"}}}
	}
	man, err := json.Marshal(struct {
		abi.Manifest
		Encoding string `json:"encoding,omitempty"`
	}{manifest, s.encoding})
	if err != nil {
		panic(err) // a fixed value: cannot fail
	}
	if s.manifest != nil {
		man = s.manifest
	}
	i32, i64 := wb.I32, wb.I64
	imports := append([]wb.Import{
		{Module: extismEnv, Name: "alloc", Params: []byte{i64}, Results: []byte{i64}},
		{Module: extismEnv, Name: "store_u8", Params: []byte{i64, i32}},
		{Module: extismEnv, Name: "output_set", Params: []byte{i64, i64}},
		{Module: extismEnv, Name: "store_u64", Params: []byte{i64, i64}},
	}, s.imports...)
	if s.initialize != nil { // go-sdk calls _initialize only in a WASI plugin
		imports = append(imports, wb.Import{Module: abi.WASIModule, Name: "sched_yield", Results: []byte{i32}})
	}
	var logInfo, inputOffset uint32
	if s.logs != nil || admits {
		logInfo = uint32(len(imports))
		imports = append(imports, wb.Import{Module: extismEnv, Name: "log_info", Params: []byte{i64}})
	}
	if admits {
		inputOffset = uint32(len(imports))
		imports = append(imports, wb.Import{Module: extismEnv, Name: "input_offset", Results: []byte{i64}})
	}
	var errorSet uint32
	if s.errorMessage != nil {
		errorSet = uint32(len(imports))
		imports = append(imports, wb.Import{Module: extismEnv, Name: "error_set", Params: []byte{i64}})
	}
	output := uint32(len(imports)) // the index of the output function below
	kcopy := output + 1
	data := []wb.Data{{Offset: 0, Bytes: man}}
	hook, end := s.hook, uint32(extismResponseAt)
	if s.logs != nil {
		data = append(data, wb.Data{Offset: extismLogAt, Bytes: s.logs})
	}
	if s.response != nil {
		end += uint32(len(s.response))
		data = append(data, wb.Data{Offset: extismResponseAt, Bytes: s.response})
		var logs []byte
		if s.logs != nil { // log_info(kcopy(logs)), logTimes times
			logs = wb.Cat(wb.I32Const(extismLogAt), wb.I32Const(int32(len(s.logs))), wb.Op(wb.OpCall, kcopy), wb.Op(wb.OpCall, logInfo))
		}
		spin := max(s.spin, s.logTimes)
		hook = wb.Cat(
			[]byte{wb.OpBlock, wb.BlockEmpty, wb.OpLoop, wb.BlockEmpty}, // for i < spin: logs; i++
			wb.Op(wb.OpLocalGet, 0), wb.I32Const(spin), []byte{0x4f}, wb.Op(wb.OpBrIf, 1),
			logs, s.spinBody,
			wb.Op(wb.OpLocalGet, 0), wb.I32Const(1), []byte{wb.OpI32Add}, wb.Op(wb.OpLocalSet, 0),
			wb.Op(wb.OpBr, 0), []byte{wb.OpEnd, wb.OpEnd},
			wb.I32Const(extismResponseAt), wb.I32Const(int32(len(s.response))), wb.Op(wb.OpCall, output), wb.I32Const(0))
	}
	if s.errorMessage != nil { // error_set(kcopy(errorMessage)); return 1
		end = extismResponseAt + uint32(len(s.errorMessage))
		data = append(data, wb.Data{Offset: extismResponseAt, Bytes: s.errorMessage})
		hook = wb.Cat(wb.I32Const(extismResponseAt), wb.I32Const(int32(len(s.errorMessage))), wb.Op(wb.OpCall, kcopy),
			wb.Op(wb.OpCall, errorSet), wb.I32Const(1))
	}
	// admit: log_info(input_offset()), then output the answer placed after
	// the response; or loop.
	admitAt := (end + 7) &^ 7
	admit := wb.Cat(wb.Op(wb.OpCall, inputOffset), wb.Op(wb.OpCall, logInfo),
		wb.I32Const(int32(admitAt)), wb.I32Const(int32(len(s.admit))), wb.Op(wb.OpCall, output), wb.I32Const(0))
	if s.admit != nil {
		end = admitAt + uint32(len(s.admit))
		data = append(data, wb.Data{Offset: admitAt, Bytes: s.admit})
	}
	if s.admitLoops {
		admit = wb.Cat([]byte{wb.OpLoop, wb.BlockEmpty}, wb.Op(wb.OpBr, 0), []byte{wb.OpEnd, wb.OpUnreachable})
	}
	mod := wb.Module{
		Imports:     imports,
		MemoryPages: max(end>>16+1, s.pages),
		Data:        data,
		Funcs: []wb.Func{
			{
				// output(ptr, len i32): make [ptr, ptr+len) the call's output.
				Params: []byte{i32, i32},
				Body: wb.Cat(
					wb.Op(wb.OpLocalGet, 0), wb.Op(wb.OpLocalGet, 1), wb.Op(wb.OpCall, kcopy),
					wb.Op(wb.OpLocalGet, 1), []byte{0xad}, wb.Op(wb.OpCall, extOutputSet),
				),
			},
			{
				// kcopy(ptr, len i32) -> off i64: copy [ptr, ptr+len) into the
				// kernel's memory, 8 bytes at a time and then the rest a byte
				// at a time.
				Params: []byte{i32, i32}, Results: []byte{i64}, Locals: []wb.Locals{{N: 1, Type: i64}, {N: 1, Type: i32}},
				Body: wb.Cat(
					wb.Op(wb.OpLocalGet, 1), []byte{0xad}, wb.Op(wb.OpCall, extAlloc), wb.Op(wb.OpLocalSet, 2), // off = alloc(len)
					[]byte{wb.OpBlock, wb.BlockEmpty, wb.OpLoop, wb.BlockEmpty},
					wb.Op(wb.OpLocalGet, 3), wb.I32Const(8), []byte{wb.OpI32Add}, wb.Op(wb.OpLocalGet, 1), []byte{0x4b}, wb.Op(wb.OpBrIf, 1), // i+8 > len: to the bytes
					wb.Op(wb.OpLocalGet, 2), wb.Op(wb.OpLocalGet, 3), []byte{0xad, 0x7c}, // off + i
					wb.Op(wb.OpLocalGet, 0), wb.Op(wb.OpLocalGet, 3), []byte{wb.OpI32Add, 0x29, 0, 0}, // i64.load(ptr + i)
					wb.Op(wb.OpCall, extStoreU64),
					wb.Op(wb.OpLocalGet, 3), wb.I32Const(8), []byte{wb.OpI32Add}, wb.Op(wb.OpLocalSet, 3),
					wb.Op(wb.OpBr, 0), []byte{wb.OpEnd, wb.OpEnd},
					[]byte{wb.OpBlock, wb.BlockEmpty, wb.OpLoop, wb.BlockEmpty},
					wb.Op(wb.OpLocalGet, 3), wb.Op(wb.OpLocalGet, 1), []byte{0x4f}, wb.Op(wb.OpBrIf, 1), // i >= len: done
					wb.Op(wb.OpLocalGet, 2), wb.Op(wb.OpLocalGet, 3), []byte{0xad, 0x7c}, // off + i
					wb.Op(wb.OpLocalGet, 0), wb.Op(wb.OpLocalGet, 3), []byte{wb.OpI32Add, 0x2d, 0, 0}, // load8_u(ptr + i)
					wb.Op(wb.OpCall, extStoreU8),
					wb.Op(wb.OpLocalGet, 3), wb.I32Const(1), []byte{wb.OpI32Add}, wb.Op(wb.OpLocalSet, 3),
					wb.Op(wb.OpBr, 0), []byte{wb.OpEnd, wb.OpEnd},
					wb.Op(wb.OpLocalGet, 2),
				),
			},
			{
				Export: abi.ExportManifest, Results: []byte{i32},
				Body: wb.Cat(wb.I32Const(0), wb.I32Const(int32(len(man))), wb.Op(wb.OpCall, output), wb.I32Const(0)),
			},
			{Export: "reconcile", Results: []byte{i32}, Locals: []wb.Locals{{N: 1, Type: i32}}, Body: hook},
		},
	}
	if admits {
		mod.Funcs = append(mod.Funcs, wb.Func{Export: "admit", Results: []byte{i32}, Body: admit})
	}
	if s.initialize != nil {
		mod.Funcs = append(mod.Funcs, wb.Func{Export: "_initialize", Body: s.initialize})
	}
	return mod.Bytes()
}

// ExtismAnswering returns a well-behaved Extism plugin of the same shape
// whose reconcile outputs response, for tests that need a plugin beside
// the corpus.
func ExtismAnswering(response []byte) []byte { return extismShape{response: response}.bytes() }

// ExtismSpinning is ExtismAnswering after a loop of iterations passes: guest
// CPU for measuring what enforcing the deadline costs.
func ExtismSpinning(response []byte, iterations int32) []byte {
	return extismShape{response: response, spin: iterations}.bytes()
}

// ExtismAnsweringMsgpack is ExtismAnswering for a plugin whose manifest asks
// for MessagePack messages; response is then a MessagePack Response.
func ExtismAnsweringMsgpack(response []byte) []byte {
	return extismShape{response: response, encoding: "msgpack"}.bytes()
}

// ExtismWithManifest is ExtismAnswering with `{"status":0}` for a plugin
// whose kubeplug_manifest outputs manifest.
func ExtismWithManifest(manifest string) []byte {
	return extismShape{response: []byte(`{"status":0}`), manifest: []byte(manifest)}.bytes()
}

// ExtismLogging is ExtismAnswering with `{"status":0}` for a plugin whose
// reconcile first logs message with the PDK's log_info, times times.
func ExtismLogging(message string, times int32) []byte {
	return extismShape{response: []byte(`{"status":0}`), logs: []byte(message), logTimes: times}.bytes()
}

// ExtismAdmitting returns a plugin with the admit hook as well, in encoding
// ("" for JSON): admit logs its input, the request exactly as the host
// encoded it, with the PDK's log_info and then outputs answer; reconcile
// answers with status ok. Its manifest admits claims and may patch their
// labels.
func ExtismAdmitting(encoding string, answer []byte) []byte {
	return extismShape{response: okResponse(encoding), encoding: encoding, admit: answer}.bytes()
}

// ExtismAdmitLooping is ExtismAdmitting with an admit hook that never
// returns.
func ExtismAdmitLooping() []byte {
	return extismShape{response: okResponse(""), admitLoops: true}.bytes()
}

// ExtismAdmittingWhileReconcileLoops is ExtismAdmitting (JSON) with a
// reconcile hook that never returns, to hold its instance.
func ExtismAdmittingWhileReconcileLoops(answer []byte) []byte {
	loop := wb.Cat([]byte{wb.OpLoop, wb.BlockEmpty}, wb.Op(wb.OpBr, 0), []byte{wb.OpEnd, wb.OpUnreachable})
	return extismShape{hook: loop, admit: answer}.bytes()
}

// okResponse is a Response with status ok in encoding.
func okResponse(encoding string) []byte {
	if encoding != "msgpack" {
		return []byte(`{"status":0}`)
	}
	b, err := (&abi.Response{}).MarshalMsg(nil)
	if err != nil {
		panic(err) // a fixed value: cannot fail
	}
	return b
}

// ExtismLogHuge returns a plugin whose reconcile, times times (for ever if
// times is negative), allocates a 24 MiB block in the kernel's memory and
// passes it to log_info, which frees it; then it answers OK.
func ExtismLogHuge(times int32) []byte {
	logHuge := wb.Cat(wb.I64Const(24<<20), wb.Op(wb.OpCall, extAlloc), wb.Op(wb.OpCall, 4))
	hook := wb.Cat([]byte{wb.OpLoop, wb.BlockEmpty}, logHuge, wb.Op(wb.OpBr, 0), []byte{wb.OpEnd, wb.OpUnreachable})
	if times >= 0 {
		ok := []byte(`{"status":0}`)
		return extismShape{
			imports: []wb.Import{{Module: extismEnv, Name: "log_info", Params: []byte{wb.I64}}},
			spin:    times, spinBody: logHuge, response: ok,
		}.bytes()
	}
	return extismShape{imports: []wb.Import{{Module: extismEnv, Name: "log_info", Params: []byte{wb.I64}}}, hook: hook}.bytes()
}
