package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/examples/warnretain/policy"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// These tests run natively, and against the compiled module when
// KUBEPLUG_TEST_WASM names it (see package sdktest).

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func TestReconcile(t *testing.T) {
	h := sdktest.New(t)
	tests := []struct {
		name   string
		set    *abi.StatefulSet
		config string
		warns  bool
	}{
		{"no retention policy", sdktest.StatefulSet("web", 3), "", true},
		{"whenDeleted Retain", sdktest.StatefulSet("web", 3, sdktest.Retention("Retain", "Delete")), "", true},
		{"whenDeleted unset defaults to Retain", sdktest.StatefulSet("web", 3, sdktest.Retention("", "Delete")), "", true},
		{"whenDeleted Delete", sdktest.StatefulSet("web", 3, sdktest.Retention("Delete", "Retain")), "", false},
		{"Delete on both", sdktest.StatefulSet("web", 3, sdktest.Retention("Delete", "Delete")), "", false},
		{"no claim templates", sdktest.StatefulSet("web", 3, sdktest.Templates()), "", false},
		{"scaled to zero still keeps claims", sdktest.StatefulSet("web", 0), "", true},
		{"under deletion", sdktest.StatefulSet("web", 3, sdktest.Deleting(now)), "", false},
		{"opt-out label", sdktest.StatefulSet("web", 3, sdktest.Labels(policy.OptOutLabel, "true")), "", false},
		{"opt-out label not true", sdktest.StatefulSet("web", 3, sdktest.Labels(policy.OptOutLabel, "false")), "", true},
		{"namespace ignored", sdktest.StatefulSet("web", 3, sdktest.Namespace("kube-system")), `{"ignoreNamespaces": ["kube-system"]}`, false},
		{"other namespace ignored", sdktest.StatefulSet("web", 3), `{"ignoreNamespaces": ["kube-system"]}`, true},
		{"empty config", sdktest.StatefulSet("web", 3), `{}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := tt.set
			req := sdktest.Request(now, set, sdktest.Pod(set, 0), sdktest.Claim("data", set, 0), sdktest.Config(tt.config))
			res := h.MustReconcile(req)
			if !tt.warns {
				if len(res.Actions) != 0 {
					t.Fatalf("actions = %+v, want none", res.Actions)
				}
				return
			}
			if len(res.Actions) != 1 {
				t.Fatalf("actions = %+v, want one warning", res.Actions)
			}
			a := res.Actions[0]
			if a.Type != abi.ActionEvent || a.Target != sdk.RefOf(set) || a.Event.Type != abi.EventWarning || a.Event.Reason != policy.Reason {
				t.Errorf("action = %+v, want a %s warning on the set", a, policy.Reason)
			}
			if !strings.Contains(a.Event.Message, "data-web-*") || !strings.Contains(a.Event.Message, policy.OptOutLabel) {
				t.Errorf("message %q does not name the claims and the opt-out", a.Event.Message)
			}
		})
	}
}

func TestDeletedSet(t *testing.T) {
	set := sdktest.StatefulSet("web", 1)
	res := sdktest.New(t).MustReconcile(sdktest.Request(now, sdktest.Claim("data", set, 0), sdktest.Key("default/web")))
	if len(res.Actions) != 0 {
		t.Errorf("actions = %+v for a deleted set, want none", res.Actions)
	}
}

func TestBadConfig(t *testing.T) {
	_, err := sdktest.New(t).Reconcile(sdktest.Request(now, sdktest.StatefulSet("web", 1), sdktest.Config(`{"ignoreNamespace": ["a"]}`)))
	if err == nil || !strings.Contains(err.Error(), `unknown field "ignoreNamespace"`) {
		t.Errorf("err = %v, want the misspelt field named", err)
	}
}

func TestManifest(t *testing.T) {
	m := sdktest.New(t).Manifest()
	if m.Name != "warnretain" || m.Subject != abi.SubjectStatefulSet || m.ABIVersion != abi.Current.String() {
		t.Errorf("manifest = %+v", m)
	}
	// The module may only record events on StatefulSets.
	if len(m.Capabilities) != 1 || !m.Capabilities[0].Allows(abi.ActionEvent, "statefulsets") || m.Capabilities[0].Allows(abi.ActionEvent, "pods") {
		t.Errorf("capabilities = %+v, want events on statefulsets only", m.Capabilities)
	}
}
