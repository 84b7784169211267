package casetest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/controller"
)

// adopted expects what adopter does to setObjects.
const adopted = `expect:
  present:
  - apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: data-web-0, ownerReferences: [{kind: StatefulSet, name: web, uid: set-uid}]}
  events: []
`

// TestRunIsTheLiveHostsPipeline: a case runs through the controller's
// reconcile, so the settings the live host applies apply to it too.
func TestRunIsTheLiveHostsPipeline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mod     controller.Module
		passes  bool
		failure string
		called  bool
	}{
		// The host's records of its writes are not events a case lists.
		{name: "as the manifest asks", passes: true, called: true},
		{name: "in the module's namespaces", mod: controller.Module{Namespaces: []string{"default"}}, passes: true, called: true},
		{name: "out of the module's namespaces", mod: controller.Module{Namespaces: []string{"prod"}},
			failure: "present[0] PersistentVolumeClaim default/data-web-0: metadata.ownerReferences"},
		{name: "not matching the selector", mod: controller.Module{Selector: labels.SelectorFromSet(labels.Set{"app": "db"})},
			failure: "present[0] PersistentVolumeClaim default/data-web-0: metadata.ownerReferences"},
		{name: "shadow mode writes nothing", mod: controller.Module{Shadow: true}, called: true,
			failure: "present[0] PersistentVolumeClaim default/data-web-0: metadata.ownerReferences"},
		{name: "beyond the allowed capabilities", mod: controller.Module{Allowed: []abi.Capability{}}, called: true,
			failure: "present[0] PersistentVolumeClaim default/data-web-0: metadata.ownerReferences"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := adopter()
			tc.mod.Runtime = m
			o := casetest.Run(context.Background(), tc.mod, parseCase(t, "name: x\n"+setObjects+adopted), nil)
			require.Equal(t, tc.passes, o.Passed, o.Failure)
			require.Contains(t, o.Failure, tc.failure)
			require.Equal(t, tc.called, len(m.requests) > 0)
		})
	}
}

func TestRunConfig(t *testing.T) {
	for _, tc := range []struct{ name, caseConfig, want string }{
		{"the entry's config when the case has none", "", `{"from":"entry"}`},
		{"the case's config wins", "config: {from: case}\n", `{"from":"case"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := adopter()
			o := casetest.Run(context.Background(), controller.Module{Runtime: m, Config: []byte(`{"from":"entry"}`)},
				parseCase(t, "name: x\n"+tc.caseConfig+setObjects), nil)
			require.True(t, o.Passed, o.Failure)
			require.JSONEq(t, tc.want, string(m.requests[0].Config))
		})
	}
}

// TestRunSurvivesAPanic: a reconcile that panics fails its case, and the
// run (kubeplug test) goes on.
func TestRunSurvivesAPanic(t *testing.T) {
	m := &fakeModule{
		manifest: manifest(abi.SubjectStatefulSet),
		decide:   func(*abi.ReconcileRequest) (*abi.Result, error) { panic("boom") },
	}
	o := casetest.Run(context.Background(), controller.Module{Runtime: m}, parseCase(t, "name: x\n"+setObjects), nil)
	require.False(t, o.Passed)
	require.Contains(t, o.Failure, "round 1: reconcile panicked: boom")
}
