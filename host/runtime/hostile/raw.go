package hostile

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"

	"github.com/kubeplug/kubeplug/abi"
	wb "github.com/kubeplug/kubeplug/host/runtime/internal/wasmbuild"
)

// Raw returns one raw-wasm module per runtime-level class of attack: what a
// module can do to the host from inside its own code, whatever its actions.
// Each is a valid kubeplug module (version marker, _initialize,
// kubeplug_malloc, a real manifest for the statefulset subject and the
// reconcile hook, kubeplug_on_reconcile) unless its class needs it invalid.
// Their hooks never return normally: the host must end them.
func Raw() []Module {
	fill := wb.Cat(wb.I32Const(0), wb.I32Const(0), wb.I32Const(63<<20), []byte{0xfc, 11, 0})
	copy := wb.Cat(wb.I32Const(0), wb.I32Const(1<<20), wb.I32Const(62<<20), []byte{0xfc, 10, 0, 0})
	forever := func(body ...[]byte) []byte { // loop { body; br 0 }; unreachable
		return wb.Cat([]byte{wb.OpLoop, wb.BlockEmpty}, wb.Cat(body...), wb.Op(wb.OpBr, 0), []byte{wb.OpEnd, wb.OpUnreachable})
	}
	newlines := wb.Cat(wb.I32Const(0), wb.I32Const('\n'), wb.I32Const(64<<20), []byte{0xfc, 11, 0}) // memory.fill
	const iovs = 64 << 20                                                                           // past the newlines
	fdWrite := wb.Import{Module: abi.WASIModule, Name: "fd_write", Params: []byte{wb.I32, wb.I32, wb.I32, wb.I32}, Results: []byte{wb.I32}}

	return []Module{
		{
			Class: "countdown-write", Stage: StageLoad, Want: "global index 0 is out of range",
			Wasm: shape{hook: forever(wb.I32Const(1<<30), wb.Op(wb.OpGlobalSet, 0))}.bytes(),
		},
		{
			Class: "countdown-write-initialize", Stage: StageLoad, Want: "global index 0 is out of range",
			Wasm: shape{init: forever(wb.I32Const(1<<30), wb.Op(wb.OpGlobalSet, 0)), hook: []byte{wb.OpUnreachable}}.bytes(),
		},
		{
			Class: "bulk-fill", Stage: StageCall, Want: "deadline exceeded after",
			Wasm: shape{pages: 1024, hook: forever(fill)}.bytes(),
		},
		{
			Class: "bulk-copy", Stage: StageCall, Want: "deadline exceeded after",
			Wasm: shape{pages: 1024, hook: forever(copy)}.bytes(),
		},
		{
			Class: "table-huge", Stage: StageLoad, Want: "table of 100000000 elements exceeds the limit of",
			Wasm: shape{tables: []wb.Table{{Min: 100_000_000}}, hook: []byte{wb.OpUnreachable}}.bytes(),
		},
		{
			// table.grow by 2^31 would make the host allocate 16 GiB: it
			// fails instead, for ever, until the deadline.
			Class: "table-grow", Stage: StageCall, Want: "deadline exceeded after",
			Wasm: shape{tables: []wb.Table{{Min: 1}}, hook: forever([]byte{0xd0, 0x70}, wb.I32Const(math.MinInt32), []byte{0xfc, 15, 0, wb.OpDrop})}.bytes(),
		},
		{
			Class: "table-eight", Stage: StageLoad, Want: "8 tables of 80000000 elements in all exceed the limit of",
			Wasm: shape{tables: eight(10_000_000), hook: []byte{wb.OpUnreachable}}.bytes(),
		},
		{
			// Grows one page at a time, touching each, to the cap and on.
			Class: "memory-grow", Stage: StageCall, Want: "out of memory at the",
			Wasm: shape{hook: wb.Cat(
				[]byte{wb.OpLoop, wb.BlockEmpty},
				wb.I32Const(1), []byte{0x40, 0}, wb.Op(wb.OpLocalTee, 2), // memory.grow 1
				wb.I32Const(-1), []byte{0x46, wb.OpIf, wb.BlockEmpty, wb.OpUnreachable, wb.OpEnd}, // i32.eq: at the cap
				wb.Op(wb.OpLocalGet, 2), wb.I32Const(16), []byte{0x74}, wb.I32Const(1), []byte{0x36, 2, 0}, // store 1 at old<<16
				wb.Op(wb.OpBr, 0), []byte{wb.OpEnd, wb.OpUnreachable},
			), hookLocals: 1}.bytes(),
		},
		{
			Class: "log-fd-write", Stage: StageCall, Want: "deadline exceeded after",
			Wasm: shape{
				imports: []wb.Import{fdWrite}, pages: 1040,
				data: []wb.Data{{Offset: iovs, Bytes: iovecs(1, 64<<20)}},
				hook: wb.Cat(newlines, forever(wb.I32Const(2), wb.I32Const(iovs), wb.I32Const(1), wb.I32Const(iovs+1024), wb.Op(wb.OpCall, 0), []byte{wb.OpDrop})),
			}.bytes(),
		},
		{
			// 8 KiB of iovecs a call, charged whatever the log budget
			// drops: 32,768 calls spend the host-work budget, which a fast
			// machine reaches before the deadline.
			Class: "log-fd-write-iovecs", Stage: StageCall, Want: "deadline exceeded after",
			OrWant: "host functions would move more than the budget of",
			Wasm: shape{
				imports: []wb.Import{fdWrite}, pages: 1040,
				data: []wb.Data{{Offset: iovs, Bytes: iovecs(1024, 64<<20)}},
				hook: wb.Cat(newlines, forever(wb.I32Const(2), wb.I32Const(iovs), wb.I32Const(1024), wb.I32Const(iovs+16<<10), wb.Op(wb.OpCall, 0), []byte{wb.OpDrop})),
			}.bytes(),
		},
		{
			Class: "log-write-log", Stage: StageCall, Want: "deadline exceeded after",
			Wasm: shape{
				imports: []wb.Import{{Module: abi.ImportModule, Name: abi.ImportWriteLog, Params: []byte{wb.I32, wb.I32, wb.I32}}},
				hook:    forever(wb.I32Const(int32(abi.LogWarn)), wb.I32Const(0), wb.I32Const(4096), wb.Op(wb.OpCall, 0)),
			}.bytes(),
		},
		{
			// Recursion without a loop, 16 i64 arguments a frame, until
			// wazero's stack ceiling (about 100 MB), which it reaches in
			// about half a second on an idle machine: under a deadline
			// shorter than that (the default 1 s on a loaded machine) the
			// call ends with "deadline exceeded" instead.
			Class: "deep-recursion", Stage: StageCall, Want: "stack overflow",
			OrWant: "deadline exceeded after",
			Wasm: shape{extra: []wb.Func{{Params: bytes.Repeat([]byte{wb.I64}, 16), Body: wb.Cat(args16(true), wb.Op(wb.OpCall, 5))}},
				hook: wb.Cat(args16(false), wb.Op(wb.OpCall, 5), []byte{wb.OpUnreachable})}.bytes(),
		},
		{
			// A loop whose body is one straight stretch of 520,000
			// instructions (1.17 MB): counted once per pass, it ran 2.7 s
			// past a 1 s deadline before the rewrite checked straight code
			// every checkpoint.MaxStretch instructions.
			Class: "long-stretch", Stage: StageCall, Want: "deadline exceeded after",
			Wasm: shape{hook: forever(stretch(130_000)), hookLocals: 1}.bytes(),
		},
		{
			// The same (482,000 instructions run a pass, 0.76 MB) in blocks
			// that branch over where checks counted in code order alone
			// would fall: a branch carries its count to where it lands.
			Class: "long-stretch-branches", Stage: StageCall, Want: "deadline exceeded after",
			Wasm: shape{hook: forever(stretchAround(2000)), hookLocals: 1}.bytes(),
		},
		{
			Class: "trap-initialize", Stage: StageLoad, Want: "_initialize: guest trapped",
			Wasm: shape{init: []byte{wb.OpUnreachable}, hook: []byte{wb.OpUnreachable}}.bytes(),
		},
		{
			Class: "loop-initialize", Stage: StageLoad, Want: "_initialize: deadline exceeded after",
			Wasm: shape{init: wb.Cat([]byte{wb.OpLoop, wb.BlockEmpty}, wb.Op(wb.OpBr, 0), []byte{wb.OpEnd}), hook: []byte{wb.OpUnreachable}}.bytes(),
		},
		{
			// poll_oneoff on a 10 s clock, for ever.
			Class: "sleep", Stage: StageCall, Want: "deadline exceeded after",
			Wasm: shape{
				imports: []wb.Import{{Module: abi.WASIModule, Name: "poll_oneoff", Params: []byte{wb.I32, wb.I32, wb.I32, wb.I32}, Results: []byte{wb.I32}}},
				data:    []wb.Data{{Offset: 2048, Bytes: clockSubscription(10e9)}},
				hook:    forever(wb.I32Const(2048), wb.I32Const(4096), wb.I32Const(1), wb.I32Const(8192), wb.Op(wb.OpCall, 0), []byte{wb.OpDrop}),
			}.bytes(),
		},
		{
			// fd_read of 8 M zero-length iovecs from stdin, for ever: the
			// host would walk them all before any check.
			Class: "wasi-fd-read-iovecs", Stage: StageCall, Want: "host call fd_read refused: 8388608 iovecs, more than the per-call limit of 1024",
			Wasm: shape{
				imports: []wb.Import{{Module: abi.WASIModule, Name: "fd_read", Params: []byte{wb.I32, wb.I32, wb.I32, wb.I32}, Results: []byte{wb.I32}}},
				pages:   hugeIOVecsPages,
				hook:    forever(wb.I32Const(0), wb.I32Const(hugeIOVecsAt), wb.I32Const(hugeIOVecs), wb.I32Const(hugeIOVecsAt+8*hugeIOVecs), wb.Op(wb.OpCall, 0), []byte{wb.OpDrop}),
			}.bytes(),
		},
		{
			// fd_write of 8 M zero-length iovecs to stdout, for ever.
			Class: "wasi-fd-write-iovecs", Stage: StageCall, Want: "host call fd_write refused: 8388608 iovecs, more than the per-call limit of 1024",
			Wasm: shape{
				imports: []wb.Import{fdWrite},
				pages:   hugeIOVecsPages,
				hook:    forever(wb.I32Const(1), wb.I32Const(hugeIOVecsAt), wb.I32Const(hugeIOVecs), wb.I32Const(hugeIOVecsAt+8*hugeIOVecs), wb.Op(wb.OpCall, 0), []byte{wb.OpDrop}),
			}.bytes(),
		},
		{
			// poll_oneoff over 300,000 subscriptions (zeroes: clocks of no
			// time), for ever.
			Class: "wasi-poll-subscriptions", Stage: StageCall, Want: "host call poll_oneoff refused: 300000 subscriptions, more than the per-call limit of 1024",
			Wasm: shape{
				imports: []wb.Import{{Module: abi.WASIModule, Name: "poll_oneoff", Params: []byte{wb.I32, wb.I32, wb.I32, wb.I32}, Results: []byte{wb.I32}}},
				pages:   (hugeIOVecsAt+80*manySubscriptions+8)>>16 + 1,
				hook: forever(wb.I32Const(hugeIOVecsAt), wb.I32Const(hugeIOVecsAt+48*manySubscriptions), wb.I32Const(manySubscriptions),
					wb.I32Const(hugeIOVecsAt+80*manySubscriptions), wb.Op(wb.OpCall, 0), []byte{wb.OpDrop}),
			}.bytes(),
		},
		{
			// path_open of a 64 MiB path, for ever: the host would read the
			// path whole.
			Class: "wasi-path-huge", Stage: StageCall, Want: "host call path_open refused: a path of 67108864 bytes, more than the per-call limit of 4 KiB",
			Wasm: shape{
				imports: []wb.Import{{Module: abi.WASIModule, Name: "path_open",
					Params: []byte{wb.I32, wb.I32, wb.I32, wb.I32, wb.I32, wb.I64, wb.I64, wb.I32, wb.I32}, Results: []byte{wb.I32}}},
				pages: hugeIOVecsPages,
				hook: forever(wb.I32Const(3), wb.I32Const(0), wb.I32Const(hugeIOVecsAt), wb.I32Const(64<<20), wb.I32Const(0),
					wb.I64Const(0), wb.I64Const(0), wb.I32Const(0), wb.I32Const(hugeIOVecsAt), wb.Op(wb.OpCall, 0), []byte{wb.OpDrop}),
			}.bytes(),
		},
		{
			// random_get over 110 MiB, for ever.
			Class: "random-get", Stage: StageCall, Want: "host call random_get refused: 115343360 bytes asked for, more than the per-call limit of 1 MiB",
			Wasm: shape{
				imports: []wb.Import{{Module: abi.WASIModule, Name: "random_get", Params: []byte{wb.I32, wb.I32}, Results: []byte{wb.I32}}},
				hook: wb.Cat(wb.I32Const(1800), []byte{0x40, 0, wb.OpDrop}, // memory.grow
					forever(wb.I32Const(0), wb.I32Const(110<<20), wb.Op(wb.OpCall, 0), []byte{wb.OpDrop})),
			}.bytes(),
		},
		{
			// 100,000 empty actions: a byte each, about 1 GB decoded.
			Class: "actions-100k", Stage: StageCall, Want: "output holds 100000 actions, more than the limit of",
			Wasm: shape{response: emptyActions(100_000)}.bytes(),
		},
		{
			// One action whose owner references are 1,000,000 empty maps:
			// 1 MB that would decode into 68 MB.
			Class: "nested-elements", Stage: StageCall, Want: "output holds 1000005 array elements and map entries, more than the limit of",
			Wasm: shape{response: nestedElements(1_000_000)}.bytes(),
		},
		{
			Class: "invalid-utf8-action", Stage: StageCall, Want: "result.actions[1].type: invalid UTF-8",
			Wasm: shape{response: encode(&abi.Response{Result: &abi.Result{Actions: []abi.Action{
				{Type: abi.ActionEvent}, {Type: "event\xff\xfe"},
			}}})}.bytes(),
		},
		{
			Class: "invalid-utf8-manifest", Stage: StageLoad, Want: "version: invalid UTF-8",
			Wasm: shape{version: "1.0\xff", hook: []byte{wb.OpUnreachable}}.bytes(),
		},
	}
}

// Where the classes of huge WASI requests keep their vectors: past the
// shape's manifest, input region and response. Zeroed memory is a vector
// of zero-length iovecs, or of clock subscriptions for no time.
const (
	hugeIOVecsAt      = 1 << 20
	hugeIOVecs        = 8 << 20
	hugeIOVecsPages   = (hugeIOVecsAt+8*hugeIOVecs+8)>>16 + 1
	manySubscriptions = 300_000
)

// emptyActions is an encoded Response whose result holds n empty actions.
func emptyActions(n uint32) []byte {
	b := []byte{0x81, 0xa6, 'r', 'e', 's', 'u', 'l', 't', 0x81, 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's', 0xdd}
	b = binary.BigEndian.AppendUint32(b, n)
	return append(b, bytes.Repeat([]byte{0x80}, int(n))...) // each an empty map
}

// nestedElements is an encoded Response with one action whose
// ownerReferences.add holds n empty maps.
func nestedElements(n uint32) []byte {
	b := append([]byte{0x81, 0xa6, 'r', 'e', 's', 'u', 'l', 't', 0x81, 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's', 0x91, 0x81, 0xaf}, "ownerReferences"...)
	b = append(b, 0x81, 0xa3, 'a', 'd', 'd', 0xdd)
	b = binary.BigEndian.AppendUint32(b, n)
	return append(b, bytes.Repeat([]byte{0x80}, int(n))...)
}

func encode(r *abi.Response) []byte {
	b, err := r.MarshalMsg(nil)
	if err != nil {
		panic(err) // a fixed value: cannot fail
	}
	return b
}

// stretch is k steps of straight code adding 1 to local 2.
func stretch(k int) []byte {
	return bytes.Repeat(wb.Cat(wb.Op(wb.OpLocalGet, 2), wb.I32Const(1), []byte{wb.OpI32Add}, wb.Op(wb.OpLocalSet, 2)), k)
}

// stretchAround is 8 nops and k blocks of 256 instructions, each 60 steps
// (stretch) and a branch to its end over 13 nops: a check placed every 256
// instructions in code order, the loop head's at 0, would always fall in
// the nops, which never run.
func stretchAround(k int) []byte {
	nops := func(n int) []byte { return bytes.Repeat([]byte{wb.OpNop}, n) }
	block := wb.Cat([]byte{wb.OpBlock, wb.BlockEmpty}, stretch(60), wb.Op(wb.OpBr, 0), nops(13), []byte{wb.OpEnd})
	return wb.Cat(nops(8), bytes.Repeat(block, k))
}

// args16 pushes 16 i64s: the function's own parameters, or zeros.
func args16(params bool) []byte {
	var b []byte
	for i := range 16 {
		if params {
			b = append(b, wb.Op(wb.OpLocalGet, uint32(i))...)
		} else {
			b = append(b, wb.I64Const(0)...)
		}
	}
	return b
}

func eight(min uint32) []wb.Table {
	ts := make([]wb.Table, 8)
	for i := range ts {
		ts[i].Min = min
	}
	return ts
}

// iovecs is n WASI iovecs, each over [0, size).
func iovecs(n int, size uint32) []byte {
	b := make([]byte, 8*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[8*i+4:], size)
	}
	return b
}

// clockSubscription is one WASI subscription to the monotonic clock, ns
// from now.
func clockSubscription(ns uint64) []byte {
	b := make([]byte, 48)
	b[8] = 0                                  // tag: clock
	binary.LittleEndian.PutUint32(b[16:], 1)  // monotonic
	binary.LittleEndian.PutUint64(b[24:], ns) // timeout, relative
	return b
}

// Where shape's modules keep their manifest and their response: apart from
// the region kubeplug_malloc lends the host for the input (at 2<<16).
const (
	manifestAt = 1024
	responseAt = 4 << 16
)

// shape is a kubeplug module around one hostile body. Function indices:
// the imports first, then the version marker, _initialize, kubeplug_malloc,
// kubeplug_manifest and kubeplug_on_reconcile, then extra.
type shape struct {
	imports    []wb.Import
	init       []byte // _initialize's body; empty does nothing
	hook       []byte // kubeplug_on_reconcile's body: (ptr, len i32) -> i64
	hookLocals uint32 // i32 locals of the hook, from index 2
	pages      uint32 // memory pages, at least 4
	tables     []wb.Table
	data       []wb.Data
	extra      []wb.Func
	// response, when set, is what the hook returns (hook is then ignored).
	response []byte
	// version, when set, replaces the manifest's version.
	version string
	// manifest, when set, replaces the whole manifest.
	manifest *abi.Manifest
}

// WithManifest returns a module whose manifest is man and whose hook traps:
// for tests of what the host shows of a manifest it did not check the
// strings of (kubeplug inspect prints a module's description).
func WithManifest(man abi.Manifest) []byte {
	return shape{manifest: &man, hook: []byte{wb.OpUnreachable}}.bytes()
}

// Answering returns a module whose manifest is man and whose reconcile
// hook always returns resp: for tests of what the host shows of a
// module's answer.
func Answering(man abi.Manifest, resp *abi.Response) []byte {
	return shape{manifest: &man, response: encode(resp)}.bytes()
}

func (s shape) bytes() []byte {
	m := s.manifest
	if m == nil {
		m = &abi.Manifest{
			Name:       "hostile",
			Version:    cmp.Or(s.version, "0.0.1"),
			ABIVersion: abi.Current.String(),
			Subject:    abi.SubjectStatefulSet,
			Hooks:      []string{abi.HookReconcile},
		}
	}
	man, err := m.MarshalMsg(nil)
	if err != nil {
		panic(err) // a fixed value: cannot fail
	}
	hook, data := s.hook, s.data
	if s.response != nil {
		hook = wb.I64Const(abi.PackPtrLen(responseAt, uint32(len(s.response))))
		data = append(data, wb.Data{Offset: responseAt, Bytes: s.response})
		s.pages = max(s.pages, (responseAt+uint32(len(s.response)))>>16+1)
	}
	var locals []wb.Locals
	if s.hookLocals > 0 {
		locals = []wb.Locals{{N: s.hookLocals, Type: wb.I32}}
	}
	funcs := []wb.Func{
		{Export: abi.VersionExport, Body: nil},
		{Export: abi.ExportInitialize, Body: s.init},
		{Export: abi.ExportMalloc, Params: []byte{wb.I32}, Results: []byte{wb.I32}, Body: wb.I32Const(2 << 16)},
		{Export: abi.ExportManifest, Results: []byte{wb.I64}, Body: wb.I64Const(abi.PackPtrLen(manifestAt, uint32(len(man))))},
		{Export: abi.ExportReconcile, Params: []byte{wb.I32, wb.I32}, Results: []byte{wb.I64}, Locals: locals, Body: hook},
	}
	return wb.Module{
		Imports:     s.imports,
		Funcs:       append(funcs, s.extra...),
		MemoryPages: max(s.pages, 4),
		Tables:      s.tables,
		Data:        append([]wb.Data{{Offset: manifestAt, Bytes: man}}, data...),
	}.Bytes()
}
