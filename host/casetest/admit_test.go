package casetest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/controller"
)

// admitter answers admission requests with decide; it has no reconcile hook.
type admitter struct {
	fakeModule
	decideAdmit func(req *abi.AdmitRequest) (*abi.AdmitResponse, error)
	seen        []*abi.AdmitRequest
}

func (a *admitter) Admit(_ context.Context, req *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	a.seen = append(a.seen, req)
	return a.decideAdmit(req)
}

func newAdmitter(decide func(req *abi.AdmitRequest) (*abi.AdmitResponse, error)) *admitter {
	m := manifest(abi.SubjectStatefulSet, abi.Capability{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}, Paths: []string{"/metadata/labels"}})
	m.Hooks = []string{abi.HookAdmit}
	m.Admission = &abi.Admission{Mutates: true, Rules: []abi.AdmissionRule{{Operations: []string{"CREATE"}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims"}}}}
	return &admitter{fakeModule: fakeModule{manifest: m}, decideAdmit: decide}
}

const claimCase = `name: label
objects:
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: web, uid: set-uid}
  spec: {volumeClaimTemplates: [{metadata: {name: data}}]}
admit:
  operation: CREATE
  namespaceLabels: {tier: gold}
  userInfo: {username: alice, groups: [dev]}
  dryRun: true
  object: {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data-web-0}}
expect:
`

func TestRunAdmission(t *testing.T) {
	labeller := func(req *abi.AdmitRequest) (*abi.AdmitResponse, error) {
		return &abi.AdmitResponse{Allowed: true, Warnings: []string{"labelled by " + req.StatefulSet.Set.Metadata.Name},
			Patch: []abi.PatchOperation{{Op: "add", Path: "/metadata/labels", Value: []byte(`{"set":"web"}`)}}}, nil
	}
	tests := []struct {
		name    string
		decide  func(req *abi.AdmitRequest) (*abi.AdmitResponse, error)
		expect  string
		failure string // "" when the case passes
	}{
		{"patched", labeller, "  allowed: true\n  warnings: [labelled by web]\n  object: {metadata: {labels: {set: web}}}\n", ""},
		{"wrong label", labeller, "  allowed: true\n  object: {metadata: {labels: {set: db}}}\n", `object.metadata.labels.set: want "db", got "web"`},
		{"wrong answer", labeller, "  allowed: false\n", "the request was allowed, want denied"},
		{"denied", func(*abi.AdmitRequest) (*abi.AdmitResponse, error) {
			return &abi.AdmitResponse{Message: "no claims today"}, nil
		},
			"  allowed: false\n  message: no claims\n", ""},
		{"wrong message", func(*abi.AdmitRequest) (*abi.AdmitResponse, error) {
			return &abi.AdmitResponse{Message: "no claims today"}, nil
		},
			"  allowed: false\n  message: tomorrow\n", `message: "no claims today" does not contain "tomorrow"`},
		{"module failed", func(*abi.AdmitRequest) (*abi.AdmitResponse, error) { return nil, errors.New("trap") },
			"  allowed: false\n", "admission failed: module call failed: trap"},
		{"patch beyond the grant", func(*abi.AdmitRequest) (*abi.AdmitResponse, error) {
			return &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{{Op: "remove", Path: "/spec"}}}, nil
		}, "  allowed: true\n", `admission failed: patch refused: patch[0]: remove "/spec" on persistentvolumeclaims is not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newAdmitter(tt.decide)
			o := casetest.Run(context.Background(), controller.Module{Runtime: m}, parseCase(t, claimCase+tt.expect), nil)
			if tt.failure == "" {
				require.True(t, o.Passed, o.Failure)
			} else {
				require.False(t, o.Passed)
				require.Contains(t, o.Failure, tt.failure)
			}
			require.Len(t, m.seen, 1)
			req := m.seen[0]
			require.Equal(t, "CREATE", req.Operation)
			require.Equal(t, "default", req.Namespace)
			require.True(t, req.DryRun)
			require.Equal(t, abi.UserInfo{Username: "alice", Groups: []string{"dev"}}, req.UserInfo)
			require.Equal(t, map[string]string{"tier": "gold"}, req.NamespaceLabels)
			require.Equal(t, "web", req.StatefulSet.Set.Metadata.Name, "the set the claim belongs to, from the case's objects")
			require.Empty(t, m.requests, "an admission case does not reconcile")
		})
	}
}

func TestParseAdmissionCaseErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"cluster expectation", "name: x\nadmit: {operation: CREATE, object: {apiVersion: v1, kind: Pod, metadata: {name: p}}}\nexpect: {allowed: true, noActions: true}\n", "an admission case (with admit:) expects allowed"},
		{"answer without admit", "name: x\nexpect: {allowed: true}\n", "add admit: with the request"},
		{"no allowed", "name: x\nadmit: {operation: CREATE, object: {apiVersion: v1, kind: Pod, metadata: {name: p}}}\n", "must expect allowed"},
		{"bad operation", "name: x\nadmit: {operation: PATCH, object: {apiVersion: v1, kind: Pod, metadata: {name: p}}}\nexpect: {allowed: true}\n", `operation "PATCH" is not CREATE`},
		{"no object", "name: x\nadmit: {operation: CREATE}\nexpect: {allowed: true}\n", "admit has neither object nor oldObject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := casetest.Parse("case.yaml", []byte(tt.doc))
			require.ErrorContains(t, err, tt.want)
		})
	}
}
