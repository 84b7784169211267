package admission

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	corpus "github.com/kubeplug/kubeplug/host/runtime/hostile"
)

// Each class of guest calls keeps a seat whatever the other holds, on a
// host of one seat per class (--guest-calls=1): admission calls that run to
// their deadline, one more in flight than there are seats, do not stop the
// reconcilers; and a reconcile module with a 10 s deadline that holds the
// reconcile seat does not make the API server's reviews fail.
func TestEachClassKeepsItsSeat(t *testing.T) {
	ctx := context.Background()
	c := kubernetes.NewForConfigOrDie(cp.Config)

	t.Run("admissions that run to their deadline", func(t *testing.T) {
		warnNs := testenv.Namespace(t, c)
		warn, loop := guest(t, "examples/warnretain"), guest(t, "e2e/guests/admitloop")
		certDir, _ := testenv.ServingCert(t)
		webhookAddr := testenv.FreeAddr(t)
		h := testenv.StartHost(t, testenv.HostOptions{
			Kubeconfig: cp.Kubeconfig,
			Config: fmt.Sprintf(`resync: 1s
modules:
- name: warnretain
  path: %s
  namespaces: [%s]
%s- name: loop
  path: %s
  allow: [{action: admit, resources: [configmaps]}]
  limits: {timeout: 10s}
  admission: {failurePolicy: Ignore}
`, warn, warnNs, testenv.Allow["examples/warnretain"], loop),
			Args: []string{"--webhook-addr", webhookAddr, "--webhook-cert-dir", certDir, "--guest-calls", "1"},
		})
		h.WaitReady(t)
		if _, err := c.AppsV1().StatefulSets(warnNs).Create(ctx, set("kept", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a flood of loopback
		}}
		review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"ConfigMap"},` +
			`"resource":{"version":"v1","resource":"configmaps"},"operation":"CREATE","namespace":"default","name":"x","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}}}`)
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		before := m.Sum("kubeplug_reconciles_total", "module", "warnretain")
		// Two clients, one seat: a review always waits for the admission
		// seat, as a flood keeps it.
		a := post(client, webhookAddr, "/admit/loop?timeout=2s", 20*time.Second, 2, review)
		m, err = h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		during := m.Sum("kubeplug_reconciles_total", "module", "warnretain") - before
		t.Logf("during 20 s of reviews that run to their deadline (%s): warnretain reconciled %v times; admission calls that gave up waiting: %v",
			a, during, m.Sum("kubeplug_guest_calls_gave_up_total", "class", "admit"))
		if during < 5 {
			t.Errorf("warnretain reconciled %v times in 20 s with a 1 s resync beside the flood: the reconcilers were starved", during)
		}
		if a.count(http.StatusOK) == 0 {
			t.Errorf("no review was answered: %s", a)
		}
	})

	t.Run("reconciles with a long deadline", func(t *testing.T) {
		loopNs, strict := testenv.Namespace(t, c), strictNamespace(t, c)
		var stretch []byte
		for _, m := range corpus.Raw() {
			if m.Class == "long-stretch" {
				stretch = m.Wasm
			}
		}
		if stretch == nil {
			t.Fatal("the corpus has no long-stretch module")
		}
		loop := filepath.Join(t.TempDir(), "long-stretch.wasm")
		if err := os.WriteFile(loop, stretch, 0o644); err != nil {
			t.Fatal(err)
		}
		policy := guest(t, "examples/storagepolicy")
		certDir, caFile := testenv.ServingCert(t)
		webhookAddr := testenv.FreeAddr(t)
		h := testenv.StartHost(t, testenv.HostOptions{
			Kubeconfig: cp.Kubeconfig,
			Config: fmt.Sprintf(`modules:
- name: slow
  path: %s
  namespaces: [%s]
  allow: []
  limits: {timeout: 10s}
- name: storagepolicy
  path: %s
  namespaces: [%s]
  allow: [{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels]}, {action: admit, resources: [statefulsets]}]
  admission: {failurePolicy: Fail, timeout: 2s}
`, loop, loopNs, policy, strict),
			Args: []string{"--webhook-addr", webhookAddr, "--webhook-cert-dir", certDir, "--guest-calls", "1"},
		})
		h.WaitReady(t)
		testenv.RegisterWebhooks(t, c, h.ConfigPath, webhookAddr, caFile)
		for i := range 3 {
			if _, err := c.AppsV1().StatefulSets(loopNs).Create(ctx, set(fmt.Sprintf("s%d", i), nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		testenv.Eventually(t, wait, "the slow module to hold the reconcile seat", func() (bool, error) {
			m, err := h.Scrape()
			return err == nil && m.Sum("kubeplug_guest_calls_running", "class", "reconcile") == 1, nil
		})
		// The webhook must be in effect before the count starts: the
		// module's own denial of a set that keeps its claims.
		denied := func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "would keep its PersistentVolumeClaims forever")
		}
		testenv.Eventually(t, wait, "the webhooks to take effect", func() (bool, error) {
			_, err := c.AppsV1().StatefulSets(strict).Create(ctx, set("marker", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return denied(err), nil
		})
		failed := 0
		for i := range 20 {
			_, err := c.AppsV1().StatefulSets(strict).Create(ctx, set(fmt.Sprintf("web-%d", i), nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if !denied(err) {
				failed++
				t.Logf("review %d, not the module's answer: %v", i, err)
			}
		}
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("20 reviews beside a reconcile module holding the seat for 10 s at a time: %d failed; reconcile calls running %v, waiting %v",
			failed, m.Sum("kubeplug_guest_calls_running", "class", "reconcile"), m.Sum("kubeplug_guest_calls_waiting", "class", "reconcile"))
		if failed > 0 {
			t.Errorf("%d of 20 reviews were not answered by their module", failed)
		}
		if got := m.Sum("kubeplug_hook_calls_total", "module", "storagepolicy", "result", "failed-closed"); got > 0 {
			t.Errorf("%v reviews answered by the failure policy", got)
		}
	})
}
