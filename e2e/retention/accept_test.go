package retention

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestHostAcceptsWhatKCMWrote: beside kube-controller-manager the host is
// usually the first to write (TestRetentionBesideKCM), so this test checks
// the other direction. kube-controller-manager alone creates a set of three
// replicas under each policy, writes the claims' references and scales the
// set down to two; then the host starts, reconciles every set several times
// (resync 1s), and must find nothing to change: it makes no write at all.
func TestHostAcceptsWhatKCMWrote(t *testing.T) {
	wasm, err := testenv.Guest("guests/retention")
	if err != nil {
		t.Fatal(err)
	}
	var namespaces []string
	for _, p := range setctl.Policies() {
		t.Run(p.Name(), func(t *testing.T) {
			e := &env{t: t, ctx: t.Context(), c: client(t), policy: p}
			e.ns = testenv.Namespace(t, e.c)
			namespaces = append(namespaces, e.ns)
			if _, err := e.c.AppsV1().StatefulSets(e.ns).Create(e.ctx, setctl.NewStatefulSet(e.ns, setName, template, p, 3), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			e.awaitPods(3)
			for ord := range int32(3) {
				e.awaitClaim(ord, present, inRange)
			}
			e.scale(2)
			e.awaitPods(2)
			for ord := range int32(2) {
				e.awaitClaim(ord, present, inRange)
			}
			e.awaitClaim(2, deletedWhen(p.WhenScaled), inRange)
			for ord := range int32(3) {
				if c := e.claim(ord); c != nil && len(c.OwnerReferences) > 0 {
					if m := updatedManagers(nil, c.ManagedFields); len(m) != 1 || m[0] != kcmManager {
						t.Errorf("claim %s: field managers %v, want only kube-controller-manager's (%s)", c.Name, m, kcmManager)
					}
				}
			}
		})
	}
	if t.Failed() {
		return
	}

	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig,
		Config: fmt.Sprintf("resync: 1s\nmodules:\n- path: %s\n  name: retention\n  namespaces: [%s]\n%s",
			wasm, strings.Join(namespaces, ", "), testenv.Allow["guests/retention"]),
	})
	h.WaitReady(t)
	const rounds = 3
	testenv.Eventually(t, testenv.Timeout, fmt.Sprintf("%d reconciles of each of %d sets", rounds, len(namespaces)), func() (bool, error) {
		m, err := h.Scrape()
		if err != nil {
			return false, err
		}
		return m.Sum("kubeplug_reconciles_total", "module", "retention", "result", "success") >= float64(rounds*len(namespaces)), nil
	})
	m, err := h.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	if w := m.Writes(); w != 0 {
		t.Errorf("the host made %v writes on claims kube-controller-manager had put in line; want none", w)
	}
	if n := m.Sum("kubeplug_actions_total", "module", "retention"); n != 0 {
		t.Errorf("the module asked for %v actions on claims kube-controller-manager had put in line; want none", n)
	}
}
