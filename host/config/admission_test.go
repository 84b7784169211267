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
		{"paths on another action", "allow: [{action: event, resources: [pods], paths: [/a]}]", "", 0, "paths apply to the mutate capability only"},
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
