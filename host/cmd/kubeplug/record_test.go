package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
)

func TestParseSubject(t *testing.T) {
	for _, tc := range []struct {
		in, kind, key string
		ok            bool
	}{
		{"statefulset/prod/web", abi.SubjectStatefulSet, "prod/web", true},
		{"persistentvolume/pvc-1", abi.SubjectPersistentVolume, "pvc-1", true},
		{"statefulset/web", "", "", false},
		{"persistentvolume/ns/pv", "", "", false},
		{"deployment/prod/web", "", "", false},
		{"statefulset//web", "", "", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			kind, key, err := parseSubject(tc.in)
			if !tc.ok {
				require.ErrorContains(t, err, "want statefulset/NAMESPACE/NAME or persistentvolume/NAME")
				require.Equal(t, exitInput, exitCode(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.kind, kind)
			require.Equal(t, tc.key, key)
		})
	}
}

// TestCleanKeepsWhatModulesRead: managed fields, the resourceVersion and
// kubectl's annotation go, and of the status only the fields the input's
// projection carries stay.
func TestCleanKeepsWhatModulesRead(t *testing.T) {
	pod := map[string]any{
		"metadata": map[string]any{
			"name": "web-0", "uid": "u1", "resourceVersion": "42", "managedFields": []any{map[string]any{}},
			"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "me"},
		},
		"status": map[string]any{"phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.1.0.1"},
	}
	got := clean(abi.KindPod, pod)
	require.Equal(t, "v1", got["apiVersion"])
	require.Equal(t, "Pod", got["kind"])
	require.Equal(t, map[string]any{"name": "web-0", "uid": "u1", "annotations": map[string]any{"keep": "me"}}, got["metadata"])
	require.Equal(t, map[string]any{"phase": "Running"}, got["status"])
}
