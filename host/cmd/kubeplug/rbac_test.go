package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/host/admission"
)

// kubeplug rbac on warnretain alone: a ClusterRole of reads and events, and
// its binding to the account given; -o helm gives the same rules as values.
func TestRBACCommand(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "host.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("modules:\n- path: "+warnretain(t)+"\n  allow: [{action: event, resources: [statefulsets]}]\n"), 0o644))

	out, errOut, code := kubeplug(t, "", "rbac", "--config", cfg, "--service-account", "ops/host", "--name", "kp")
	require.Equal(t, 0, code, errOut)
	docs := splitDocs(out)
	require.Len(t, docs, 2, out)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), &role))
	require.Equal(t, "kp", role.Name)
	for _, r := range role.Rules {
		require.NotContains(t, r.Resources, "secrets")
		require.NotContains(t, r.Verbs, "delete")
	}
	var binding rbacv1.ClusterRoleBinding
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &binding))
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "ops", Name: "host"}}, binding.Subjects)

	helm, errOut, code := kubeplug(t, "", "rbac", "--config", cfg, "-o", "helm", "--leader-elect")
	require.Equal(t, 0, code, errOut)
	var values struct {
		RBAC struct {
			Rules           []rbacv1.PolicyRule            `json:"rules"`
			NamespacedRules map[string][]rbacv1.PolicyRule `json:"namespacedRules"`
		} `json:"rbac"`
	}
	require.NoError(t, yaml.UnmarshalStrict([]byte(helm), &values))
	require.Equal(t, role.Rules, values.RBAC.Rules)
	require.Contains(t, values.RBAC.NamespacedRules, "kubeplug-system", "the Lease and the host's events")
}

// kubeplug rbac --modules-dir reads a configuration written for the image
// (modules under /modules/) where the modules were built, and derives the
// same rules as from the built module's own path.
func TestRBACModulesDir(t *testing.T) {
	dir := t.TempDir()
	wasm, err := os.ReadFile(warnretain(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "warnretain.wasm"), wasm, 0o644))
	entry := "\n  allow: [{action: event, resources: [statefulsets]}]\n"
	image := filepath.Join(dir, "image.yaml")
	require.NoError(t, os.WriteFile(image, []byte("modules:\n- path: /modules/warnretain.wasm"+entry), 0o644))
	built := filepath.Join(dir, "built.yaml")
	require.NoError(t, os.WriteFile(built, []byte("modules:\n- path: "+filepath.Join(dir, "warnretain.wasm")+entry), 0o644))

	_, errOut, code := kubeplug(t, "", "rbac", "--config", image)
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "module file /modules/warnretain.wasm does not exist", "the image's path, without --modules-dir")

	want, errOut, code := kubeplug(t, "", "rbac", "--config", built, "--leader-elect")
	require.Equal(t, 0, code, errOut)
	got, errOut, code := kubeplug(t, "", "rbac", "--config", image, "--modules-dir", dir, "--leader-elect")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, want, got)
}

func TestRBACUsage(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		msg  string
	}{
		{"no config", []string{"rbac"}, "--config is required"},
		{"bad output", []string{"rbac", "--config", "h.yaml", "-o", "json"}, "want yaml or helm"},
		{"bad account", []string{"rbac", "--config", "h.yaml", "--service-account", "nonamespace"}, "want NAMESPACE/NAME"},
		{"bad secret", []string{"rbac", "--config", "h.yaml", "--webhook-cert-secret", "a/b/c"}, "want NAMESPACE/NAME"},
		{"missing config", []string{"rbac", "--config", "/nonexistent/host.yaml"}, "host configuration"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := kubeplug(t, "", tt.args...)
			require.Equal(t, exitInput, code, errOut)
			require.Contains(t, errOut, tt.msg)
		})
	}
}

// webhook-config's ways to trust the webhook exclude each other, and
// without any it warns.
func TestWebhookConfigTrust(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		msg  string
	}{
		{"two ways", []string{"--service", "a/b", "--self-managed", "--cert-manager", "a/c"}, "give one of --ca-bundle, --self-managed and --cert-manager"},
		{"objects without cert-manager", []string{"--service", "a/b", "--cert-manager-objects"}, "give --cert-manager"},
		{"bad certificate", []string{"--service", "a/b", "--cert-manager", "nons"}, "want NAMESPACE/NAME"},
		{"objects without a service", []string{"--url", "https://x", "--cert-manager", "a/c", "--cert-manager-objects"}, "give --service"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := kubeplug(t, "", append([]string{"webhook-config", "--config", "h.yaml"}, tt.args...)...)
			require.Equal(t, exitInput, code, errOut)
			require.Contains(t, errOut, tt.msg)
		})
	}
}

func splitDocs(s string) []string {
	var out []string
	for _, d := range strings.Split(s, "---\n") {
		if strings.TrimSpace(d) != "" {
			out = append(out, d)
		}
	}
	return out
}

// What each way to trust the webhook puts in or beside the configurations.
func TestWebhookTrustSetups(t *testing.T) {
	svc := admission.Endpoint{ServiceNamespace: "kp", ServiceName: "webhook"}

	cm, err := webhookTrust(svc, "kp/webhook-cert", false, true)
	require.NoError(t, err)
	require.Equal(t, map[string]string{CertManagerInjectAnnotation: "kp/webhook-cert"}, cm.annotations)
	require.Len(t, cm.objects, 2, "an Issuer and a Certificate")
	b, err := yaml.Marshal(cm.objects[1])
	require.NoError(t, err)
	require.Contains(t, string(b), "webhook.kp.svc")
	require.Empty(t, cm.warning)

	self, err := webhookTrust(svc, "", true, false)
	require.NoError(t, err)
	require.Empty(t, self.annotations)
	require.Empty(t, self.warning)

	withCA := svc
	withCA.CABundle = []byte("-----BEGIN CERTIFICATE-----")
	own, err := webhookTrust(withCA, "", false, false)
	require.NoError(t, err)
	require.Empty(t, own.warning)

	none, err := webhookTrust(svc, "", false, false)
	require.NoError(t, err)
	require.Contains(t, none.warning, "no caBundle")
	url, err := webhookTrust(admission.Endpoint{URL: "https://x"}, "", false, false)
	require.NoError(t, err)
	require.Contains(t, url.warning, "system roots")
}
