package admission

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// A module never sees a Secret, whatever it asks and whatever is
// registered: a module whose rules ask for Secrets is refused at load, by
// `kubeplug run` and by `kubeplug webhook-config`, even when allow: grants
// every resource; and a review of a Secret that reaches the host anyway
// (a webhook registered by hand for a module that admits claims) is
// answered by the failure policy before the module sees it, and nothing of
// the Secret's data reaches the host's log.
func TestSecretsAreNeverSentToAModule(t *testing.T) {
	ctx := context.Background()
	watch := guest(t, "e2e/guests/secretwatch")
	bin, err := testenv.Kubeplug()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("refused at load", func(t *testing.T) {
		for _, allow := range []string{"[]", `[{action: admit, resources: ["*"]}]`} {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "host.yaml")
			entry := fmt.Sprintf("modules:\n- name: secretwatch\n  path: %s\n  allow: %s\n", watch, allow)
			if err := os.WriteFile(cfg, []byte(entry), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"run", "--config", cfg, "--kubeconfig", cp.Kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", "0"},
				{"webhook-config", "--config", cfg, "--url", "https://127.0.0.1:9443"},
			} {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				out, err := exec.CommandContext(cctx, bin, args...).CombinedOutput()
				cancel()
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != 2 {
					t.Fatalf("kubeplug %s with allow: %s: %v, want exit status 2:\n%s", args[0], allow, err, out)
				}
				if !strings.Contains(string(out), "admission.rules[0] of its manifest registers secrets, which the host never sends to a module") {
					t.Errorf("kubeplug %s with allow: %s says:\n%s", args[0], allow, out)
				}
			}
		}
	})

	t.Run("a review of a Secret", func(t *testing.T) {
		w := &warnings{}
		rc := rest.CopyConfig(cp.Config)
		rc.WarningHandler = w
		c := kubernetes.NewForConfigOrDie(rc)
		ns := testenv.Namespace(t, c)
		policy := guest(t, "examples/storagepolicy")
		certDir, caFile := testenv.ServingCert(t)
		webhookAddr := testenv.FreeAddr(t)
		h := testenv.StartHost(t, testenv.HostOptions{
			Kubeconfig: cp.Kubeconfig,
			Config: fmt.Sprintf("modules:\n- name: storagepolicy\n  path: %s\n  allow: [{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels]}, {action: admit, resources: [statefulsets]}]\n  admission: {failurePolicy: Ignore}\n",
				policy),
			Args: []string{"--webhook-addr", webhookAddr, "--webhook-cert-dir", certDir, "--log-level", "debug"},
		})
		h.WaitReady(t)

		// Registered by hand, past what webhook-config would print.
		ca, err := os.ReadFile(caFile)
		if err != nil {
			t.Fatal(err)
		}
		url := "https://" + webhookAddr + "/admit/storagepolicy"
		ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
		vc := &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "secrets-by-hand-" + ns},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "secrets.by-hand.e2e.kubeplug.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
				}},
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
				FailurePolicy:     &ignore, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			}},
		}
		if _, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), vc.Name, metav1.DeleteOptions{})
		})

		const password = "e2e-password-never-logged"
		n := 0
		testenv.Eventually(t, wait, "the host to answer the Secret's review", func() (bool, error) {
			n++
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", n)}, StringData: map[string]string{"password": password}}
			if _, err := c.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
				return false, err
			}
			for _, warning := range w.take() {
				if strings.Contains(warning, "a request for secrets, which the host never sends to a module") {
					return true, nil
				}
			}
			return false, nil
		})
		log := h.Log()
		for _, leak := range []string{password, base64.StdEncoding.EncodeToString([]byte(password))} {
			if strings.Contains(log, leak) {
				t.Errorf("the Secret's data is in the host's log:\n%s", log)
			}
		}
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Sum("kubeplug_hook_errors_total", "module", "storagepolicy", "reason", "request"); got < 1 {
			t.Errorf("kubeplug_hook_errors_total{reason=request} = %v, want the withheld reviews counted", got)
		}
	})
}
