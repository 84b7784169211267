package manifests_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/e2e/internal/manifests"
)

// TestChartPrometheusRule: the chart renders the alerts of
// deploy/prometheus/prometheusrule.yaml (which host/metrics/alerts tests)
// as they are, Prometheus' templates included, only when asked for and
// with the labels a Prometheus's ruleSelector wants; the base has none.
func TestChartPrometheusRule(t *testing.T) {
	_, objs, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kubeplug-system"})
	require.NoError(t, err)
	require.Nil(t, manifests.Find(objs, "PrometheusRule", "kubeplug"), "no PrometheusRule unless asked for")
	_, base, err := manifests.Kustomize("deploy")
	require.NoError(t, err)
	require.Nil(t, manifests.Find(base, "PrometheusRule", "kubeplug"), "the base needs no Prometheus Operator")

	values := map[string]any{"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prometheus-stack"}}}
	for _, m := range manifests.Lint("kubeplug-system", values) {
		t.Errorf("helm lint: %v", m)
	}
	_, objs, err = manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "monitoring-test", Values: values})
	require.NoError(t, err)
	rule := manifests.Find(objs, "PrometheusRule", "kubeplug")
	require.NotNil(t, rule)
	require.Equal(t, "monitoring.coreos.com/v1", rule.GetAPIVersion())
	require.Equal(t, "monitoring-test", rule.GetNamespace())
	require.Equal(t, "kube-prometheus-stack", rule.GetLabels()["release"])

	b, err := os.ReadFile(filepath.Join(manifests.Root(), "deploy", "prometheus", "prometheusrule.yaml"))
	require.NoError(t, err)
	shipped, err := manifests.Decode(string(b))
	require.NoError(t, err)
	require.Len(t, shipped, 1)
	require.Equal(t, shipped[0].Object["spec"], rule.Object["spec"], "the chart's rules are deploy/prometheus/prometheusrule.yaml's")
}
