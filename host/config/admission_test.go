package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/config"
)

func TestAdmissionSettings(t *testing.T) {
	tests := []struct {
		name   string
		entry  string
		policy string
		time   time.Duration
		err    string
	}{
		{"defaults", "", "", 0, ""},
		{"set", "admission: {failurePolicy: Ignore, timeout: 3s}", "Ignore", 3 * time.Second, ""},
		{"bad policy", "admission: {failurePolicy: Maybe}", "", 0, `"Maybe" is not a failure policy`},
		{"fractional timeout", "admission: {timeout: 1500ms}", "", 0, "whole seconds from 1s to 30s"},
		{"long timeout", "admission: {timeout: 31s}", "", 0, "whole seconds from 1s to 30s"},
		{"mutate without paths", "allow: [{action: mutate, resources: [persistentvolumeclaims]}]", "", 0, "paths is missing"},
		{"paths on another action", "allow: [{action: event, resources: [pods], paths: [/a]}]", "", 0, "paths apply to the mutate and apply capabilities only"},
		{"not a pointer", "allow: [{action: mutate, resources: [persistentvolumeclaims], paths: [metadata]}]", "", 0, "is not a JSON Pointer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, err := load(t, "modules:\n- path: guests/m.wasm\n  "+tt.entry+"\n")
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.policy, f.Modules[0].FailurePolicy)
			require.Equal(t, tt.time, f.Modules[0].WebhookTimeout)
		})
	}
}

func TestGrantMutatePaths(t *testing.T) {
	ask := func(paths ...string) abi.Manifest {
		return abi.Manifest{Name: "m", Capabilities: []abi.Capability{{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}, Paths: paths}}}
	}
	f, _, err := load(t, "modules:\n- path: guests/m.wasm\n  allow: [{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels, /spec/resources]}]\n")
	require.NoError(t, err)
	m := f.Modules[0]
	_, err = m.Grant(ask("/metadata/labels/tier", "/spec/resources"))
	require.NoError(t, err, "paths under a granted one are granted")
	_, err = m.Grant(ask("/metadata/labelsx"))
	require.ErrorIs(t, err, config.ErrNotAllowed, "a prefix counts at a segment boundary only")
	require.ErrorContains(t, err, `{action: mutate, resources: [persistentvolumeclaims], paths: ["/metadata/labelsx"]}`)
	_, err = m.Grant(ask("*"))
	require.ErrorIs(t, err, config.ErrNotAllowed, `"*" is granted only by "*"`)
}

// An admit hook's rules decide which objects the API server sends the
// module: the operator grants them, with admit or with mutate on the same
// resources, and Secrets and Leases are never granted.
func TestGrantAdmissionRules(t *testing.T) {
	rule := func(groups []string, resources ...string) abi.AdmissionRule {
		return abi.AdmissionRule{Operations: []string{"CREATE"}, APIGroups: groups, APIVersions: []string{"v1"}, Resources: resources}
	}
	labelClaims := abi.Capability{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}, Paths: []string{"/metadata/labels"}}
	validating := func(rules ...abi.AdmissionRule) abi.Manifest {
		return abi.Manifest{Name: "m", Hooks: []string{abi.HookAdmit}, Admission: &abi.Admission{Rules: rules}}
	}
	storagepolicy := abi.Manifest{Name: "m", Hooks: []string{abi.HookAdmit}, Capabilities: []abi.Capability{labelClaims},
		Admission: &abi.Admission{Mutates: true, Rules: []abi.AdmissionRule{rule([]string{"apps"}, "statefulsets"), rule([]string{""}, "persistentvolumeclaims")}}}
	for _, tc := range []struct {
		name, allow string
		mode        string
		man         abi.Manifest
		refused     []string // what the refusal says; nil: granted
	}{
		{name: "allow: [] grants no rule", allow: `[]`, man: validating(rule([]string{""}, "persistentvolumeclaims")),
			refused: []string{"asks for {action: admit, resources: [persistentvolumeclaims]}", "allow:\n- {action: admit, resources: [persistentvolumeclaims]}\n"}},
		{name: "admit grants its resources", allow: `[{action: admit, resources: [persistentvolumeclaims]}]`, man: validating(rule([]string{""}, "persistentvolumeclaims"))},
		{name: "a resource grants its subresources", allow: `[{action: admit, resources: [pods]}]`, man: validating(rule([]string{""}, "pods/status", "pods"))},
		{name: "a subresource does not grant its resource", allow: `[{action: admit, resources: [pods/status]}]`, man: validating(rule([]string{""}, "pods")),
			refused: []string{"{action: admit, resources: [pods]}"}},
		{name: "a mutate grant covers what it patches", allow: `[{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels]}, {action: admit, resources: [statefulsets]}]`, man: storagepolicy},
		{name: "and no more", allow: `[{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels]}]`, man: storagepolicy,
			refused: []string{"{action: admit, resources: [statefulsets]}", "- {action: mutate, resources: [persistentvolumeclaims], paths: [\"/metadata/labels\"]}\n- {action: admit, resources: [statefulsets]}\n"}},
		{name: `"*" only by "*"`, allow: `[{action: admit, resources: [statefulsets, pods]}]`, man: validating(rule([]string{"apps"}, "*")),
			refused: []string{`{action: admit, resources: ["*"]}`}},
		{name: `"*" granted`, allow: `[{action: admit, resources: ["*"]}]`, man: validating(rule([]string{"apps"}, "*"))},
		{name: "Secrets never", allow: `[{action: admit, resources: ["*"]}]`, man: validating(rule([]string{""}, "secrets")),
			refused: []string{"admission.rules[0] of its manifest registers secrets, which the host never sends to a module"}},
		{name: "Secrets never, through a wildcard", allow: `[{action: admit, resources: ["*"]}]`, man: validating(rule([]string{""}, "configmaps"), rule([]string{"*"}, "*/*")),
			refused: []string{"admission.rules[1] of its manifest registers secrets"}},
		{name: "Leases never", allow: `[{action: admit, resources: ["*"]}]`, man: validating(rule([]string{"coordination.k8s.io"}, "leases")),
			refused: []string{"registers leases.coordination.k8s.io"}},
		{name: "Secrets never, in shadow either", mode: "shadow", man: validating(rule([]string{""}, "secrets")),
			refused: []string{"never sends to a module"}},
		{name: "another group's secrets", allow: `[{action: admit, resources: [secrets]}]`, man: validating(rule([]string{"example.com"}, "secrets"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entry := "modules:\n- path: guests/m.wasm\n"
			if tc.allow != "" {
				entry += "  allow: " + tc.allow + "\n"
			}
			if tc.mode != "" {
				entry += "  mode: " + tc.mode + "\n"
			}
			f, _, err := load(t, entry)
			require.NoError(t, err)
			_, err = f.Modules[0].Grant(tc.man)
			if tc.refused == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, config.ErrNotAllowed)
			for _, want := range tc.refused {
				require.ErrorContains(t, err, want)
			}
		})
	}
}

func TestAllowAdmitResources(t *testing.T) {
	f, _, err := load(t, "modules:\n- path: guests/m.wasm\n  allow: [{action: admit, resources: [deployments, pods/status, \"*\", \"*/scale\", widgets.example.com]}]\n")
	require.NoError(t, err)
	require.Equal(t, []string{"deployments", "pods/status", "*", "*/scale", "widgets.example.com"}, f.Modules[0].Allow[0].Resources)
	_, _, err = load(t, "modules:\n- path: guests/m.wasm\n  allow: [{action: admit, resources: [\"Pods\"]}]\n")
	require.ErrorContains(t, err, `"Pods" is not a resource as an admission rule names it`)
	_, _, err = load(t, "modules:\n- path: guests/m.wasm\n  allow: [{action: admit, resources: [pods], paths: [/x]}]\n")
	require.ErrorContains(t, err, "paths apply to the mutate and apply capabilities only")
}
