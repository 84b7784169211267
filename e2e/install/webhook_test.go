package install

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/e2e/internal/manifests"
	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// webhookLabel on a namespace, with the install's namespace as value,
// puts it under that install's webhook (its namespaceSelector): the
// webhook fails closed, and other tests' namespaces are not its business.
const webhookLabel = "install.e2e.kubeplug.dev/webhook"

// storagePolicy is the host.yaml entry of the example module the image
// has at /modules/storagepolicy.wasm: it denies StatefulSets that keep
// their claims forever in namespaces labelled storage-policy=strict, and
// labels the claims of a StatefulSet with the set's name.
var storagePolicy = map[string]any{
	"path": "/modules/storagepolicy.wasm",
	"allow": []any{
		map[string]any{"action": "mutate", "resources": []any{"persistentvolumeclaims"}, "paths": []any{"/metadata/labels"}},
		map[string]any{"action": "admit", "resources": []any{"statefulsets"}},
	},
	"admission": map[string]any{"failurePolicy": "Fail"},
}

// chartModules is the chart's default modules: value.
func chartModules(t *testing.T) []any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(manifests.ChartDir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Modules []any `json:"modules"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("the chart's values.yaml: %v", err)
	}
	if len(v.Modules) == 0 {
		t.Fatal("the chart's values.yaml has no modules")
	}
	return v.Modules
}

// webhookValues is the chart's webhook.mutating value for module, made as
// the chart's values.yaml says: from what `kubeplug webhook-config
// --self-managed` prints for a host.yaml with that module (read from the
// build, not the image), limited to the namespaces labelled
// webhookLabel=selector.
func webhookValues(t *testing.T, module map[string]any, service, name, selector string) []any {
	t.Helper()
	bin, err := testenv.Kubeplug()
	if err != nil {
		t.Fatal(err)
	}
	entry := map[string]any{}
	for k, v := range module {
		entry[k] = v
	}
	base := strings.TrimSuffix(filepath.Base(module["path"].(string)), ".wasm")
	if entry["path"], err = testenv.Guest("examples/" + base); err != nil {
		t.Fatal(err)
	}
	hostYAML, err := yaml.Marshal(map[string]any{"modules": []any{entry}})
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "host.yaml")
	if err := os.WriteFile(config, hostYAML, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "webhook-config", "--config", config, "--cache-dir", "",
		"--service", service, "--self-managed", "--name", name)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubeplug webhook-config: %v\n%s", err, stderr.String())
	}
	var mc admissionregistrationv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(out, &mc); err != nil {
		t.Fatalf("webhook-config printed more or other than one MutatingWebhookConfiguration: %v\n%s", err, out)
	}
	var hooks []any
	for _, h := range mc.Webhooks {
		if h.ClientConfig.Service == nil || h.ClientConfig.Service.Path == nil {
			t.Fatalf("webhook %s: no service path:\n%s", h.Name, out)
		}
		v := map[string]any{
			"module":            strings.TrimPrefix(*h.ClientConfig.Service.Path, "/admit/"),
			"failurePolicy":     string(*h.FailurePolicy),
			"timeoutSeconds":    *h.TimeoutSeconds,
			"rules":             jsonValue(t, h.Rules),
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{webhookLabel: selector}},
		}
		if len(h.MatchConditions) > 0 {
			v["matchConditions"] = jsonValue(t, h.MatchConditions)
		}
		hooks = append(hooks, v)
	}
	if len(hooks) != 1 {
		t.Fatalf("webhook-config printed %d webhooks, want storagepolicy's one:\n%s", len(hooks), out)
	}
	return hooks
}

// jsonValue is v as Helm values hold it: JSON's maps and slices.
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func labelNamespace(t *testing.T, ns string, labels map[string]string) {
	t.Helper()
	c := cp.Client()
	o, err := c.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Labels == nil {
		o.Labels = map[string]string{}
	}
	for k, v := range labels {
		o.Labels[k] = v
	}
	if _, err := c.CoreV1().Namespaces().Update(t.Context(), o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// admits shows the installed webhook called by the API server: the host
// made its CA and serving certificate, kept them in the Secret and patched
// the CA into the chart's webhook configuration (nothing else gave it
// one), and the API server, verifying the certificate for the Service's
// name, has storagepolicy deny a StatefulSet in a strict namespace and
// allow one that deletes its claims.
func admits(t *testing.T, in installed) {
	t.Helper()
	ctx := t.Context()
	c := cp.Client()
	strict := testenv.Namespace(t, c)
	labelNamespace(t, strict, map[string]string{webhookLabel: in.namespace, "storage-policy": "strict"})
	const denial = "would keep its PersistentVolumeClaims forever"
	kept := setctl.NewStatefulSet(strict, "kept", "data", setctl.Policy{WhenDeleted: setctl.Retain, WhenScaled: setctl.Retain}, 1)
	testenv.Eventually(t, wait, "the API server to call the installed webhook", func() (bool, error) {
		_, err := c.AppsV1().StatefulSets(strict).Create(ctx, kept, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), denial), nil
	})
	_, err := c.AppsV1().StatefulSets(strict).Create(ctx, kept, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "StatefulSet kept "+denial) || !strings.Contains(err.Error(), "labelled storage-policy=strict") {
		t.Fatalf("create in a strict namespace: %v, want storagepolicy's denial", err)
	}
	gone := setctl.NewStatefulSet(strict, "gone", "data", setctl.Policy{WhenDeleted: setctl.Delete, WhenScaled: setctl.Delete}, 1)
	if _, err := c.AppsV1().StatefulSets(strict).Create(ctx, gone, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("a set that deletes its claims is allowed: %v", err)
	}

	secret, err := c.CoreV1().Secrets(in.namespace).Get(ctx, in.webhook.secret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the host's certificate Secret: %v", err)
	}
	ca := secret.Data["ca.crt"]
	if !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
		t.Fatalf("Secret %s/%s: no CA certificate in ca.crt", in.namespace, in.webhook.secret)
	}
	mc, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, in.webhook.configuration, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range mc.Webhooks {
		if !bytes.Contains(h.ClientConfig.CABundle, bytes.TrimSpace(ca)) {
			t.Errorf("webhook %s: caBundle %q does not hold the CA of the host's Secret", h.Name, h.ClientConfig.CABundle)
		}
	}
}

// mutates shows storagepolicy's mutation through the API server: a claim
// of the StatefulSet set in ns gets the set's name as a label. The module
// finds the set in the host's cache: dry runs until it does.
func mutates(t *testing.T, ns, set string) {
	t.Helper()
	ctx := t.Context()
	c := cp.Client()
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: setctl.ClaimName("data", set, 9)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	testenv.Eventually(t, wait, "storagepolicy to label a claim of "+ns+"/"+set, func() (bool, error) {
		got, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && got.Labels["storagepolicy.example.com/statefulset"] == set, err
	})
}
