// Command good is the runtime tests' well-behaved guest, with misbehaviours
// on request: the name part of the request's key ("default/<mode>") selects
// what one call does, so one module can fail a call and then serve the next.
package main

import (
	"fmt"
	"os"
	"strings"

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
		Name:       "good",
		Version:    "0.1.0",
		ABIVersion: "1.0.0",
		Subject:    abi.SubjectStatefulSet,
		Hooks:      []string{abi.HookReconcile},
		Capabilities: []abi.Capability{
			{Action: abi.ActionEvent, Resources: []string{"statefulsets"}},
		},
	})
}

// hold keeps the memory bomb's allocations reachable.
var hold [][]byte

//go:wasmexport kubeplug_on_reconcile
func reconcile(ptr, n uint32) uint64 {
	req, err := raw.Request(ptr, n)
	if err != nil {
		return raw.Respond(&abi.Response{Status: abi.StatusBadInput, Message: err.Error()})
	}
	if req.Key == "" {
		// The benchmarks' empty request.
		return raw.Empty()
	}
	ns, name, _ := strings.Cut(req.Key, "/")
	target := abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: ns, Name: name, UID: "uid-" + name}
	event := func(msg string) uint64 {
		return raw.Respond(&abi.Response{Result: &abi.Result{Actions: []abi.Action{{
			Type:   abi.ActionEvent,
			Target: target,
			Event:  &abi.Event{Type: abi.EventNormal, Reason: "Echo", Message: msg},
		}}}})
	}
	switch name {
	case "ok":
		return event(req.Key)
	case "loop":
		raw.Log(abi.LogInfo, "looping "+req.Key)
		for {
		}
	case "bomb":
		for {
			hold = append(hold, make([]byte, 1<<20))
		}
	case "trap":
		var p *abi.Response
		return uint64(p.Status) // nil dereference: the Go runtime dies
	case "panic":
		panic("guest gave up")
	case "exit":
		os.Exit(3)
	case "garbage":
		b := make([]byte, 64)
		x := uint32(2463534242)
		for i := range b {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			b[i] = byte(x)
		}
		b[0] = 0xc1 // never used by MessagePack, so never well-formed
		return raw.Keep(b)
	case "huge":
		return raw.Keep(make([]byte, 2<<20))
	case "outside":
		return abi.PackPtrLen(0xffff0000, 4096)
	case "failed":
		return raw.Respond(&abi.Response{Status: abi.StatusFailed, Message: "config is invalid"})
	case "recovered":
		return raw.Respond(&abi.Response{Status: abi.StatusPanic, Message: "index out of range"})
	case "status":
		return raw.Respond(&abi.Response{Status: 42, Message: "what is this"})
	case "log":
		raw.Log(abi.LogWarn, "hello from "+req.Key)
		raw.Log(abi.LogInfo, strings.Repeat("x", 5000))
		fmt.Println("stdout line one")
		fmt.Println(strings.Repeat("y", 5000))
		fmt.Print("stdout line two\nstdout ")
		fmt.Println("line three")
		fmt.Fprintln(os.Stderr, "stderr line")
		return event("logged")
	case "sandbox":
		var b strings.Builder
		fmt.Fprintf(&b, "home=%q environ=%q args=%d", os.Getenv("HOME"), os.Environ(), len(os.Args))
		entries, err := os.ReadDir("/")
		fmt.Fprintf(&b, " readdir=%d,%v", len(entries), err != nil)
		_, err = os.ReadFile("/etc/hostname")
		fmt.Fprintf(&b, " readfile=%v", err != nil)
		wd, err := os.Getwd()
		fmt.Fprintf(&b, " getwd=%q,%v", wd, err != nil)
		return event(b.String())
	case "delete":
		return raw.Respond(&abi.Response{Result: &abi.Result{Actions: []abi.Action{{
			Type:   abi.ActionDeleteObject,
			Target: target,
		}}}})
	}
	return raw.Empty()
}
