package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
)

func TestParseSubject(t *testing.T) {
	for _, tc := range []struct {
		in, kind, key string
		err           string
	}{
		{"statefulset/prod/web", abi.SubjectStatefulSet, "prod/web", ""},
		{"statefulsets/prod/web", abi.SubjectStatefulSet, "prod/web", ""},
		{"statefulsets.apps/prod/web", abi.SubjectStatefulSet, "prod/web", ""},
		{"StatefulSet/prod/web", abi.SubjectStatefulSet, "prod/web", ""},
		{"persistentvolume/pvc-1", abi.SubjectPersistentVolume, "pvc-1", ""},
		{"persistentvolumes/pvc-1", abi.SubjectPersistentVolume, "pvc-1", ""},
		{"PersistentVolume/pvc-1", abi.SubjectPersistentVolume, "pvc-1", ""},
		{"statefulset/web", "", "", "a StatefulSet is namespaced: want statefulset/NAMESPACE/NAME"},
		{"statefulsets.apps/prod/web/x", "", "", "a StatefulSet is namespaced: want statefulsets.apps/NAMESPACE/NAME"},
		{"statefulset//web", "", "", "a StatefulSet is namespaced"},
		{"persistentvolume/ns/pv", "", "", "a PersistentVolume is cluster-scoped: want persistentvolume/NAME"},
		{"persistentvolume/", "", "", "a PersistentVolume is cluster-scoped"},
		{"persistentvolumes.core/pv", "", "", "is not a subject kubeplug serves"},
		{"deployment/prod/web", "", "", `"deployment" is not a subject kubeplug serves: want statefulset/NAMESPACE/NAME or persistentvolume/NAME`},
		{"", "", "", "is not a subject kubeplug serves"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			kind, key, err := parseSubject(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
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
