package manifests_test

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/e2e/internal/manifests"
)

// templateUpdateHook is templateupdate's webhook, as kubeplug webhook-config
// prints it, in the chart's values.
var templateUpdateHook = map[string]any{
	"module": "templateupdate", "failurePolicy": "Ignore",
	"rules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"persistentvolumeclaims"}}},
}

func webhookValues(mode string) map[string]any {
	return map[string]any{"webhook": map[string]any{
		"enabled":     true,
		"certificate": map[string]any{"mode": mode},
		"mutating":    []any{templateUpdateHook},
	}}
}

func TestChartLint(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"default values":           nil,
		"webhook, own certificate": webhookValues("self"),
		"webhook, cert-manager":    webhookValues("cert-manager"),
		"monitoring": {"serviceMonitor": map[string]any{"enabled": true},
			"grafanaDashboard": map[string]any{"enabled": true}},
	} {
		t.Run(name, func(t *testing.T) {
			for _, m := range manifests.Lint("kubeplug-system", values) {
				t.Errorf("helm lint: %v", m)
			}
		})
	}
}

// TestChartDefaults renders the chart with its default values and checks
// what an operator relies on: host.yaml in a ConfigMap without a hash, the
// restricted securityContext, the probes on their own port, GOMEMLIMIT
// matching the memory limit, the downward API, the PDB, the CRD.
func TestChartDefaults(t *testing.T) {
	_, objs, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kubeplug-system"})
	require.NoError(t, err)
	require.NotNil(t, manifests.Find(objs, "CustomResourceDefinition", "volumeclaimupdates.kubeplug.dev"))
	require.NotNil(t, manifests.Find(objs, "PodDisruptionBudget", "kubeplug"))
	require.NotNil(t, manifests.Find(objs, "ServiceAccount", "kubeplug"))
	require.Nil(t, manifests.Find(objs, "MutatingWebhookConfiguration", "kubeplug"), "no webhook unless asked for")

	cm := manifests.Find(objs, "ConfigMap", "kubeplug-config")
	require.NotNil(t, cm, "host.yaml's ConfigMap must be named without a hash")
	var host struct {
		Modules []struct {
			Path      string           `json:"path"`
			Allow     []map[string]any `json:"allow"`
			Admission map[string]any   `json:"admission"`
			Mode      string           `json:"mode"`
			Limits    map[string]any   `json:"limits"`
		} `json:"modules"`
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "host.yaml")
	require.NoError(t, yaml.UnmarshalStrict([]byte(data), &host), "host.yaml:\n%s", data)
	require.Len(t, host.Modules, 2)
	require.Equal(t, "/modules/retention.wasm", host.Modules[0].Path)
	for _, m := range host.Modules {
		require.Equal(t, "shadow", m.Mode, "%s: kube-controller-manager implements its proposal; enforcing beside it fights it", m.Path)
	}
	require.NotEmpty(t, host.Modules[0].Allow)
	require.Equal(t, "Ignore", host.Modules[0].Admission["failurePolicy"], "retention's admit hook must never block claim creation")

	d := deployment(t, objs, "kubeplug")
	c := d.Spec.Template.Spec.Containers[0]
	requireRestricted(t, d)
	require.Contains(t, c.Args, "--health-probe-bind-address=:8081")
	require.Contains(t, c.Args, "--leader-elect-name=kubeplug")
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, "probes", c.LivenessProbe.HTTPGet.Port.String())
	require.Equal(t, "409MiB", env(c, "GOMEMLIMIT").Value, "80% of 512Mi")
	require.Equal(t, "metadata.name", env(c, "POD_NAME").ValueFrom.FieldRef.FieldPath)
	require.Equal(t, "metadata.namespace", env(c, "POD_NAMESPACE").ValueFrom.FieldRef.FieldPath)
	require.Equal(t, "kubeplug-config", volume(d, "config").ConfigMap.Name)
	require.NotNil(t, volume(d, "cache").EmptyDir)
}

func TestChartGoMemLimit(t *testing.T) {
	for mem, want := range map[string]string{"2Gi": "1638MiB", "1000Mi": "800MiB"} {
		_, objs, err := manifests.Helm(manifests.Release{Name: "kp", Namespace: "ns", Values: map[string]any{
			"resources": map[string]any{"limits": map[string]any{"memory": mem}}}})
		require.NoError(t, err)
		require.Equal(t, want, env(deployment(t, objs, "kp-kubeplug").Spec.Template.Spec.Containers[0], "GOMEMLIMIT").Value, mem)
	}
	_, _, err := manifests.Helm(manifests.Release{Name: "kp", Namespace: "ns", Values: map[string]any{
		"resources": map[string]any{"limits": map[string]any{"memory": "1G"}}}})
	require.ErrorContains(t, err, `resources.limits.memory "1G": write it in Mi or Gi`)
}

func TestChartWebhook(t *testing.T) {
	t.Run("own certificate", func(t *testing.T) {
		_, objs, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kp", Values: webhookValues("self")})
		require.NoError(t, err)
		c := deployment(t, objs, "kubeplug").Spec.Template.Spec.Containers[0]
		require.Contains(t, c.Args, "--webhook-cert-secret=kp/kubeplug-webhook-tls")
		require.Contains(t, c.Args, "--webhook-service=kp/kubeplug-webhook")
		require.Contains(t, c.Args, "--webhook-config-name=kubeplug", "the host patches the caBundle of the configurations the chart names")
		mwc := manifests.Find(objs, "MutatingWebhookConfiguration", "kubeplug")
		require.NotNil(t, mwc)
		require.Empty(t, mwc.GetAnnotations())
		hooks, _, _ := unstructured.NestedSlice(mwc.Object, "webhooks")
		require.Len(t, hooks, 1)
		path, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "service", "path")
		require.Equal(t, "/admit/templateupdate", path)
		role := rules(t, objs, "Role", "kubeplug")
		require.Contains(t, role, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"},
			ResourceNames: []string{"kubeplug-webhook-tls"}, Verbs: []string{"get", "update"}})
		require.Nil(t, manifests.Find(objs, "Certificate", "kubeplug-webhook"))
	})
	t.Run("cert-manager", func(t *testing.T) {
		_, objs, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kp", Values: webhookValues("cert-manager")})
		require.NoError(t, err)
		mwc := manifests.Find(objs, "MutatingWebhookConfiguration", "kubeplug")
		require.Equal(t, "kp/kubeplug-webhook", mwc.GetAnnotations()["cert-manager.io/inject-ca-from"])
		cert := manifests.Find(objs, "Certificate", "kubeplug-webhook")
		require.NotNil(t, cert)
		names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
		require.Contains(t, names, "kubeplug-webhook.kp.svc")
		d := deployment(t, objs, "kubeplug")
		require.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "--webhook-cert-dir=/etc/kubeplug/webhook")
		require.Equal(t, "kubeplug-webhook-tls", volume(d, "webhook-tls").Secret.SecretName)
		for _, r := range rules(t, objs, "Role", "kubeplug") {
			require.NotContains(t, r.Resources, "secrets", "with cert-manager the host writes no Secret")
		}
	})
	t.Run("unknown mode", func(t *testing.T) {
		_, _, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kp", Values: webhookValues("manual")})
		require.ErrorContains(t, err, `webhook.certificate.mode "manual": must be self or cert-manager`)
	})
}

// TestKustomize builds the base and each overlay with the kustomize API,
// and the base again with kubectl, whose kustomize must agree.
func TestKustomize(t *testing.T) {
	base, objs, err := manifests.Kustomize("deploy")
	require.NoError(t, err)
	ns := manifests.Find(objs, "Namespace", "kubeplug-system")
	require.NotNil(t, ns)
	require.Equal(t, "restricted", ns.GetLabels()["pod-security.kubernetes.io/enforce"])
	require.NotNil(t, manifests.Find(objs, "ConfigMap", "kubeplug-config"), "host.yaml's ConfigMap must be named without a hash")
	require.Nil(t, manifests.Find(objs, "CustomResourceDefinition", "volumeclaimupdates.kubeplug.dev"),
		"the CRD is installed apart: kubectl delete -k deploy/ must not delete every VolumeClaimUpdate")
	require.NotNil(t, manifests.Find(objs, "PodDisruptionBudget", "kubeplug"))
	d := deployment(t, objs, "kubeplug")
	requireRestricted(t, d)
	c := d.Spec.Template.Spec.Containers[0]
	require.Equal(t, "409MiB", env(c, "GOMEMLIMIT").Value, "as the chart's default")
	require.Equal(t, "512Mi", c.Resources.Limits.Memory().String())

	kubectl, err := exec.LookPath("kubectl")
	require.NoError(t, err, "kubectl kustomize deploy/ is what a user runs: install kubectl")
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(manifests.Root(), "deploy")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	_, fromKubectl, err := manifests.Kustomize("deploy")
	require.NoError(t, err)
	kobjs, err := manifests.Decode(string(out))
	require.NoError(t, err)
	require.Equal(t, len(fromKubectl), len(kobjs), "kubectl kustomize deploy/ and the kustomize API disagree:\n%s\n---\n%s", out, base)

	t.Run("crds", func(t *testing.T) {
		_, objs, err := manifests.Kustomize("deploy/crds")
		require.NoError(t, err)
		require.Len(t, objs, 1)
		require.NotNil(t, manifests.Find(objs, "CustomResourceDefinition", "volumeclaimupdates.kubeplug.dev"))
	})
	t.Run("overlays/webhook", func(t *testing.T) {
		_, objs, err := manifests.Kustomize("deploy/overlays/webhook")
		require.NoError(t, err)
		require.NotNil(t, manifests.Find(objs, "Service", "kubeplug-webhook"))
		require.NotNil(t, manifests.Find(objs, "MutatingWebhookConfiguration", "kubeplug"))
		d := deployment(t, objs, "kubeplug")
		requireRestricted(t, d)
		require.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "--webhook-cert-secret=kubeplug-system/kubeplug-webhook-tls")
		cm := manifests.Find(objs, "ConfigMap", "kubeplug-config")
		data, _, _ := unstructured.NestedString(cm.Object, "data", "host.yaml")
		require.Contains(t, data, "/modules/templateupdate.wasm")
	})
	t.Run("overlays/shard", func(t *testing.T) {
		_, objs, err := manifests.Kustomize("deploy/overlays/shard")
		require.NoError(t, err)
		cm := manifests.Find(objs, "ConfigMap", "kubeplug-config")
		data, _, _ := unstructured.NestedString(cm.Object, "data", "host.yaml")
		require.Contains(t, data, "labelSelector: kubeplug.dev/shard=a")
		require.Contains(t, deployment(t, objs, "kubeplug").Spec.Template.Spec.Containers[0].Args, "--leader-elect-name=kubeplug-shard-a")
	})
}

// TestChartAndKustomizeAgree holds the two installs together: the same
// modules, the same cluster rules, and neither grants a wildcard.
func TestChartAndKustomizeAgree(t *testing.T) {
	_, kobjs, err := manifests.Kustomize("deploy")
	require.NoError(t, err)
	_, hobjs, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kubeplug-system"})
	require.NoError(t, err)
	kRules, hRules := rules(t, kobjs, "ClusterRole", "kubeplug"), rules(t, hobjs, "ClusterRole", "kubeplug")
	require.Equal(t, kRules, hRules)
	for _, r := range kRules {
		for _, f := range [][]string{r.APIGroups, r.Resources, r.Verbs} {
			require.NotContains(t, f, "*", "a wildcard rule: %+v", r)
		}
		if slices.Contains(r.Resources, "secrets") {
			require.Equal(t, []string{"get"}, r.Verbs, "Secrets are only read, by name")
		}
	}
	hostYAML := func(objs []*unstructured.Unstructured) any {
		data, _, _ := unstructured.NestedString(manifests.Find(objs, "ConfigMap", "kubeplug-config").Object, "data", "host.yaml")
		var v map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(data), &v))
		return v["modules"]
	}
	require.Equal(t, hostYAML(kobjs), hostYAML(hobjs))
}

// requireRestricted checks the pod template against Pod Security's
// restricted profile, as the admission plugin would, and the settings it
// does not check: a read-only root filesystem, caches on an emptyDir.
func requireRestricted(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	require.NoError(t, err)
	for _, r := range ev.EvaluatePod(psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()},
		&d.Spec.Template.ObjectMeta, &d.Spec.Template.Spec) {
		require.True(t, r.Allowed, "restricted Pod Security: %s: %s", r.ForbiddenReason, r.ForbiddenDetail)
	}
	sc := d.Spec.Template.Spec.Containers[0].SecurityContext
	require.NotNil(t, sc)
	require.True(t, *sc.ReadOnlyRootFilesystem)
	require.False(t, *sc.AllowPrivilegeEscalation)
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
}

func deployment(t *testing.T, objs []*unstructured.Unstructured, name string) *appsv1.Deployment {
	t.Helper()
	u := manifests.Find(objs, "Deployment", name)
	require.NotNil(t, u, "no Deployment %s", name)
	var d appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
	return &d
}

func rules(t *testing.T, objs []*unstructured.Unstructured, kind, name string) []rbacv1.PolicyRule {
	t.Helper()
	u := manifests.Find(objs, kind, name)
	require.NotNil(t, u, "no %s %s", kind, name)
	var r rbacv1.ClusterRole
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r))
	return r.Rules
}

func env(c corev1.Container, name string) corev1.EnvVar {
	for _, e := range c.Env {
		if e.Name == name {
			return e
		}
	}
	return corev1.EnvVar{Name: name + " (missing)"}
}

func volume(d *appsv1.Deployment, name string) corev1.Volume {
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	return corev1.Volume{Name: name + " (missing)"}
}
