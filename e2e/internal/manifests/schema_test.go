package manifests_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/e2e/internal/manifests"
)

// TestChartValuesSchema: values of the wrong type or a misspelt key are
// refused by name before anything is rendered, as helm install refuses
// them, where without the schema `--set replicaCount=abc` rendered
// `replicas: abc`.
func TestChartValuesSchema(t *testing.T) {
	for _, tt := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"replicaCount a string", map[string]any{"replicaCount": "abc"}, "/replicaCount"},
		{"replicaCount negative", map[string]any{"replicaCount": -1}, "/replicaCount"},
		{"a misspelt key", map[string]any{"replicaCont": 3}, "replicaCont"},
		{"a misspelt nested key", map[string]any{"image": map[string]any{"tags": "v1"}}, "tags"},
		{"port out of range", map[string]any{"metrics": map[string]any{"port": 70000}}, "/metrics/port"},
		{"pull policy", map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}, "/image/pullPolicy"},
		{"digest", map[string]any{"image": map[string]any{"digest": "latest"}}, "/image/digest"},
		{"log format", map[string]any{"logFormat": "xml"}, "/logFormat"},
		{"memory share", map[string]any{"goMemLimitPercent": 150}, "/goMemLimitPercent"},
		{"leader election", map[string]any{"leaderElection": map[string]any{"enabled": "yes"}}, "/leaderElection/enabled"},
		{"modules not a list", map[string]any{"modules": map[string]any{"path": "/modules/retention.wasm"}}, "/modules"},
		{"RBAC rule without verbs", map[string]any{"rbac": map[string]any{"rules": []any{map[string]any{"resources": []any{"pods"}}}}}, "/rbac/rules/0"},
		{"webhook failure policy", map[string]any{"webhook": map[string]any{"mutating": []any{map[string]any{"module": "m", "failurePolicy": "Maybe"}}}}, "/webhook/mutating/0/failurePolicy"},
		{"webhook timeout", map[string]any{"webhook": map[string]any{"mutating": []any{map[string]any{"module": "m", "timeoutSeconds": 60}}}}, "/webhook/mutating/0/timeoutSeconds"},
		{"extra args not strings", map[string]any{"extraArgs": []any{map[string]any{"a": 1}}}, "/extraArgs/0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kubeplug-system", Values: tt.values})
			require.ErrorContains(t, err, "values don't meet the specifications of the schema")
			require.ErrorContains(t, err, tt.want)
		})
	}
}
