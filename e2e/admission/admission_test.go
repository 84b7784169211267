package admission

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

const wait = 60 * time.Second

// warnings collects the warnings the API server returns to a client.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// TestAdmission registers three modules with the API server through the
// output of kubeplug webhook-config and checks what each does to requests
// made through the API server: the example storagepolicy module denies a
// StatefulSet in a strict namespace and labels a claim of a set (found in
// the host's caches); a module that loops answers with its failure policy
// within the webhook timeout, Fail denying and Ignore allowing with a
// warning; and once the host is down, the API server applies the failure
// policies itself.
func TestAdmission(t *testing.T) {
	ctx := context.Background()
	w := &warnings{}
	rc := rest.CopyConfig(cp.Config)
	rc.WarningHandler = w
	c := kubernetes.NewForConfigOrDie(rc)

	strict, open := strictNamespace(t, c), testenv.Namespace(t, c)
	loopFail, loopIgnore := testenv.Namespace(t, c), testenv.Namespace(t, c)

	policyWasm, err := testenv.Guest("examples/storagepolicy")
	if err != nil {
		t.Fatal(err)
	}
	loopWasm, err := testenv.Guest("e2e/guests/admitloop")
	if err != nil {
		t.Fatal(err)
	}

	// A CA and a serving certificate for 127.0.0.1, made as the issue asks.
	certDir, caFile := testenv.ServingCert(t)
	webhookAddr := testenv.FreeAddr(t)

	// The loop modules may run for 10 s: the webhook's 2 s timeout, less
	// the host's margin, is what must end their calls.
	config := fmt.Sprintf(`modules:
- name: storagepolicy
  path: %s
  namespaces: [%s, %s]
  allow: [{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels]}, {action: admit, resources: [statefulsets]}]
  admission: {failurePolicy: Fail, timeout: 5s}
- name: loop-fail
  path: %s
  namespaces: [%s]
  allow: [{action: admit, resources: [configmaps]}]
  limits: {timeout: 10s}
  admission: {failurePolicy: Fail, timeout: 2s}
- name: loop-ignore
  path: %s
  namespaces: [%s]
  allow: [{action: admit, resources: [configmaps]}]
  limits: {timeout: 10s}
  admission: {failurePolicy: Ignore, timeout: 2s}
`, policyWasm, strict, open, loopWasm, loopFail, loopWasm, loopIgnore)
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig, Config: config,
		Args: []string{"--webhook-addr", webhookAddr, "--webhook-cert-dir", certDir},
	})
	h.WaitReady(t)

	// Register the webhooks with what kubeplug webhook-config prints.
	if hooks := testenv.RegisterWebhooks(t, c, h.ConfigPath, webhookAddr, caFile); len(hooks.Mutating) != 1 || len(hooks.Validating) != 1 {
		t.Fatalf("webhook-config printed %d mutating and %d validating configurations, want a mutating and a validating one:\n%s",
			len(hooks.Mutating), len(hooks.Validating), hooks.Printed)
	}

	// The configuration takes effect when the API server's informers see
	// it: create a denied marker until it is denied.
	testenv.Eventually(t, wait, "the webhooks to take effect", func() (bool, error) {
		_, err := c.AppsV1().StatefulSets(strict).Create(ctx, set("marker", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "would keep its PersistentVolumeClaims forever"), nil
	})

	t.Run("denial", func(t *testing.T) {
		_, err := c.AppsV1().StatefulSets(strict).Create(ctx, set("web", nil), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "StatefulSet web would keep its PersistentVolumeClaims forever") ||
			!strings.Contains(err.Error(), "labelled storage-policy=strict") {
			t.Fatalf("create in a strict namespace: %v, want the module's denial", err)
		}
		if _, err := c.AppsV1().StatefulSets(strict).Create(ctx, set("web", ptr.To("Delete")), metav1.CreateOptions{}); err != nil {
			t.Fatalf("a set that deletes its claims is allowed: %v", err)
		}
	})

	t.Run("mutation", func(t *testing.T) {
		if _, err := c.AppsV1().StatefulSets(open).Create(ctx, set("db", nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("a set in a namespace that is not strict is allowed: %v", err)
		}
		// The module finds the set in the host's cache, which sees it
		// shortly after it is created: dry runs until it does.
		testenv.Eventually(t, wait, "the host's cache to hold the set", func() (bool, error) {
			got, err := c.CoreV1().PersistentVolumeClaims(open).Create(ctx, claim("data-db-0"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil && got.Labels["storagepolicy.example.com/statefulset"] == "db", err
		})
		got, err := c.CoreV1().PersistentVolumeClaims(open).Create(ctx, claim("data-db-0"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Labels["storagepolicy.example.com/statefulset"] != "db" || got.Labels["app"] != "db" {
			t.Fatalf("created claim's labels %v: want the module's label beside the claim's own", got.Labels)
		}
		other, err := c.CoreV1().PersistentVolumeClaims(open).Create(ctx, claim("scratch"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := other.Labels["storagepolicy.example.com/statefulset"]; ok {
			t.Fatalf("a claim of no set was labelled: %v", other.Labels)
		}
	})

	t.Run("looping module, failurePolicy Fail", func(t *testing.T) {
		_, err := c.CoreV1().ConfigMaps(loopFail).Create(ctx, configMap("x"), metav1.CreateOptions{})
		// The host's own answer, not the API server's timeout: it says the
		// module failed and why.
		if err == nil || !strings.Contains(err.Error(), "kubeplug module loop-fail failed and its failurePolicy Fail denies the request") ||
			!strings.Contains(err.Error(), "deadline") {
			t.Fatalf("create: %v, want the host's denial by the failure policy", err)
		}
	})

	t.Run("looping module, failurePolicy Ignore", func(t *testing.T) {
		w.take()
		if _, err := c.CoreV1().ConfigMaps(loopIgnore).Create(ctx, configMap("x"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create: %v, want it allowed by the failure policy", err)
		}
		if got := strings.Join(w.take(), "\n"); !strings.Contains(got, "kubeplug module loop-ignore failed and its failurePolicy Ignore allowed the request") {
			t.Fatalf("warnings %q: want the host's, saying the module failed", got)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			module, result string
		}{{"storagepolicy", "denied"}, {"storagepolicy", "mutated"}, {"loop-fail", "failed-closed"}, {"loop-ignore", "failed-open"}} {
			if m.Sum("kubeplug_hook_calls_total", "module", c.module, "hook", "admit", "result", c.result) < 1 {
				t.Errorf("no kubeplug_hook_calls_total{module=%q,result=%q}", c.module, c.result)
			}
		}
		if m.Sum("kubeplug_hook_errors_total", "module", "loop-fail", "reason", "call") < 1 {
			t.Error("no kubeplug_hook_errors_total{module=\"loop-fail\",reason=\"call\"}")
		}
	})

	t.Run("host down", func(t *testing.T) {
		if err := h.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		_, err := c.AppsV1().StatefulSets(strict).Create(ctx, set("down", ptr.To("Delete")), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
			t.Fatalf("create with the host down and failurePolicy Fail: %v, want the API server's failure", err)
		}
		w.take()
		if _, err := c.CoreV1().ConfigMaps(loopIgnore).Create(ctx, configMap("down"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create with the host down and failurePolicy Ignore: %v, want it allowed", err)
		}
	})
}

// strictNamespace returns a new namespace labelled storage-policy=strict,
// where storagepolicy denies StatefulSets that keep their claims forever.
func strictNamespace(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	ns := testenv.Namespace(t, c)
	nsObj, err := c.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["storage-policy"] = "strict"
	if _, err := c.CoreV1().Namespaces().Update(t.Context(), nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

func set(name string, whenDeleted *string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
	if whenDeleted != nil {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1.PersistentVolumeClaimRetentionPolicyType(*whenDeleted),
			WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		}
	}
	return s
}

func claim(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "db"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
