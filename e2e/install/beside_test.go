package install

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// besideKCM shows the installed default modules beside
// kube-controller-manager's own KEP-1847 code: a StatefulSet that deletes its
// claims, created, scaled down and deleted, with the StatefulSet controller,
// the garbage collector and pvc-protection doing the work. The host writes
// nothing for retention and fights nothing: no Warning event in the
// namespace, no conflict, no write; and it reports that retention agrees
// with what the cluster shows (a reconcile counted as an agreement after
// each step, no subject left differing, no disagreement, the info line).
func besideKCM(t *testing.T, in installed, work string, log func() string) {
	t.Helper()
	ctx := t.Context()
	c := cp.Client()
	metrics := fmt.Sprintf("127.0.0.1:%d", in.metrics)
	retention := moduleSeries(t, in, "retention")
	agreements := func() float64 { return retention("kubeplug_shadow_agreements_total", "compare_with", "cluster") }
	// settled waits for the host to have agreed with the cluster since
	// before, and to see no subject differ from it.
	settled := func(what string, before float64) {
		t.Helper()
		testenv.Eventually(t, wait, "retention to agree with the cluster "+what, func() (bool, error) {
			return agreements() > before && retention("kubeplug_shadow_differing_subjects") == 0, nil
		})
	}

	set := setctl.NewStatefulSet(work, "web", "data", setctl.Policy{WhenDeleted: setctl.Delete, WhenScaled: setctl.Delete}, 3)
	before := agreements()
	if _, err := c.AppsV1().StatefulSets(work).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := c.AppsV1().StatefulSets(work).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for ord := range int32(3) {
		awaitClaim(t, work, setctl.ClaimName("data", "web", ord), func(cl *corev1.PersistentVolumeClaim) bool {
			ref := metav1.GetControllerOfNoCopy(cl)
			return ref != nil && ref.UID == s.UID
		}, "owned by its StatefulSet (kube-controller-manager's reference)")
	}
	settled("once the set's claims are its", before)
	// kube-controller-manager's own race at a claim's creation is not the
	// host's: it creates the claim, then updates its references from a
	// cache the PV binder's status write has already outdated, and records
	// FailedUpdate, with or without a host. What follows must add none.
	warned := warnings(t, work)

	// Scale-down: the StatefulSet controller gives the condemned claims to
	// their pods before it deletes them, and the garbage collector deletes
	// the claims with the pods.
	before = agreements()
	if _, err := c.AppsV1().StatefulSets(work).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ord := range []int32{1, 2} {
		awaitClaimGone(t, work, setctl.ClaimName("data", "web", ord))
	}
	awaitClaim(t, work, setctl.ClaimName("data", "web", 0), func(*corev1.PersistentVolumeClaim) bool { return true }, "kept")
	settled("after the scale-down", before)

	// Deletion: the garbage collector deletes the remaining pod and claim.
	bg := metav1.DeletePropagationBackground
	if err := c.AppsV1().StatefulSets(work).Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	awaitClaimGone(t, work, setctl.ClaimName("data", "web", 0))
	testenv.Eventually(t, wait, "no subject of retention's left differing from the cluster", func() (bool, error) {
		return retention("kubeplug_shadow_differing_subjects") == 0, nil
	})

	evs, err := c.CoreV1().Events(work).List(ctx, metav1.ListOptions{FieldSelector: "type=Warning"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if max(e.Count, 1) > warned[e.UID] {
			t.Errorf("Warning event over the scale-down or the deletion, on %s %s: %s: %s (from %s)",
				e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Source.Component)
		}
	}
	if n := retention("kubeplug_shadow_disagreements_total"); n != 0 {
		t.Errorf("retention disagreed with the cluster %v times:\n%s", n, log())
	}
	for _, result := range []string{"executed", "conflict", "failed", "refused"} {
		if n := retention("kubeplug_actions_total", "result", result); n != 0 {
			t.Errorf("retention's actions %s: %v, want none: a module in shadow mode writes nothing", result, n)
		}
	}
	m, err := testenv.Scrape(metrics)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Sum("kubeplug_reconciles_total", "result", "conflict") + m.Sum("kubeplug_actions_total", "result", "conflict"); n != 0 {
		t.Errorf("the host met %v conflicts:\n%s", n, log())
	}
	// What the host holds on a small cluster, for README.md's "Sizing".
	t.Logf("the host's Go runtime holds %.0f MiB from the system, %.0f MiB of heap in use",
		m.Sum("go_memstats_sys_bytes")/(1<<20), m.Sum("go_memstats_heap_inuse_bytes")/(1<<20))
	if l := log(); !strings.Contains(l, "shadow agrees with the cluster") {
		t.Errorf("the host's log does not say that retention agrees with the cluster:\n%s", l)
	}
}

// moduleSeries returns the sum of the series of the host's family name for
// module whose labels include match, scraped at each call.
func moduleSeries(t *testing.T, in installed, module string) func(name string, match ...string) float64 {
	addr := fmt.Sprintf("127.0.0.1:%d", in.metrics)
	return func(name string, match ...string) float64 {
		t.Helper()
		m, err := testenv.Scrape(addr)
		if err != nil {
			t.Fatal(err)
		}
		return m.Sum(name, append([]string{"module", module}, match...)...)
	}
}

// warnings returns the count of each Warning event in ns, by UID.
func warnings(t *testing.T, ns string) map[types.UID]int32 {
	t.Helper()
	evs, err := cp.Client().CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "type=Warning"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[types.UID]int32{}
	for _, e := range evs.Items {
		out[e.UID] = max(e.Count, 1)
	}
	return out
}

// awaitClaim waits for the claim name in ns to exist and satisfy ok.
func awaitClaim(t *testing.T, ns, name string, ok func(*corev1.PersistentVolumeClaim) bool, what string) {
	t.Helper()
	testenv.Eventually(t, wait, "claim "+ns+"/"+name+" "+what, func() (bool, error) {
		cl, err := cp.Client().CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && ok(cl), err
	})
}

// awaitClaimGone waits for the claim name in ns to be deleted.
func awaitClaimGone(t *testing.T, ns, name string) {
	t.Helper()
	testenv.Eventually(t, wait, "claim "+ns+"/"+name+" to be deleted", func() (bool, error) {
		_, err := cp.Client().CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// createSet creates set as a user does: kube-controller-manager's
// StatefulSet controller makes its pods and claims.
func createSet(t *testing.T, set *appsv1.StatefulSet) {
	t.Helper()
	if _, err := cp.Client().AppsV1().StatefulSets(set.Namespace).Create(t.Context(), set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
