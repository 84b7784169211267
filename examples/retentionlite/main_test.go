package main

import (
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// These tests run natively, and against the compiled module when
// KUBEPLUG_TEST_WASM names it (see package sdktest).

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func TestReconcile(t *testing.T) {
	h := sdktest.New(t)
	deleteBoth := sdktest.StatefulSet("web", 1, sdktest.Retention("Delete", "Delete"))
	owned := sdktest.OwnedBy(sdk.NewControllerRef(deleteBoth))
	tests := []struct {
		name   string
		set    *abi.StatefulSet
		claims []any
		want   []string // claims given to the set
	}{
		{"whenDeleted Delete gives every claim to the set", deleteBoth,
			[]any{sdktest.Claim("data", deleteBoth, 0), sdktest.Claim("data", deleteBoth, 1)}, []string{"data-web-0", "data-web-1"}},
		{"a claim the set owns is left alone", deleteBoth, []any{sdktest.Claim("data", deleteBoth, 0, owned)}, nil},
		{"whenScaled is ignored by design: a condemned claim stays the set's", deleteBoth,
			[]any{sdktest.Claim("data", deleteBoth, 0, owned), sdktest.Claim("data", deleteBoth, 1, owned)}, nil},
		{"whenDeleted Retain does nothing", sdktest.StatefulSet("web", 1, sdktest.Retention("Retain", "Delete")),
			[]any{sdktest.Claim("data", deleteBoth, 0)}, nil},
		{"no policy does nothing", sdktest.StatefulSet("web", 1), []any{sdktest.Claim("data", deleteBoth, 0)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := h.MustReconcile(sdktest.Request(now, append([]any{tt.set}, tt.claims...)...))
			if len(res.Actions) != len(tt.want) {
				t.Fatalf("actions = %+v, want updates of %v", res.Actions, tt.want)
			}
			for i, a := range res.Actions {
				add := a.OwnerReferences.Add
				if a.Type != abi.ActionUpdateOwnerReferences || a.Target.Name != tt.want[i] || len(add) != 1 ||
					add[0] != sdk.NewControllerRef(tt.set) {
					t.Errorf("action %d = %+v, want %s given to the set", i, a, tt.want[i])
				}
			}
		})
	}
}
