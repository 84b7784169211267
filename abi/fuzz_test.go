package abi_test

import (
	"testing"

	"github.com/kubeplug/kubeplug/abi"
)

// FuzzDecode feeds arbitrary guest output to the decoders the host runs on
// it. They must return an error or a value, never panic, and whatever they
// accept must encode again.
func FuzzDecode(f *testing.F) {
	for _, seed := range []interface{ MarshalMsg([]byte) ([]byte, error) }{sampleResponse(), sampleRequest(), &abi.Manifest{Name: "x", Hooks: []string{"reconcile"}},
		&abi.Response{Admit: &abi.AdmitResponse{Allowed: true, Warnings: []string{"w"}, Patch: []abi.PatchOperation{{Op: "add", Path: "/a", Value: []byte(`1`)}}}},
		&abi.AdmitRequest{Operation: "CREATE", Object: &abi.AdmitObject{Kind: "Pod", Pod: &abi.Pod{}, JSON: []byte(`{}`)}}} {
		b, err := seed.MarshalMsg(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xdf, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := abi.DecodeResponse(b); err == nil {
			if _, err := r.MarshalMsg(nil); err != nil {
				t.Fatalf("re-encode response: %v", err)
			}
		}
		if m, err := abi.DecodeManifest(b); err == nil {
			if _, err := m.MarshalMsg(nil); err != nil {
				t.Fatalf("re-encode manifest: %v", err)
			}
		}
		if q, err := abi.DecodeReconcileRequest(b); err == nil {
			if _, err := q.MarshalMsg(nil); err != nil {
				t.Fatalf("re-encode request: %v", err)
			}
		}
		if q, err := abi.DecodeAdmitRequest(b); err == nil {
			if _, err := q.MarshalMsg(nil); err != nil {
				t.Fatalf("re-encode admit request: %v", err)
			}
		}
	})
}
