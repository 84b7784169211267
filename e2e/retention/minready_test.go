package retention

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestCondemnedClaimWaitsForMinReadySeconds: an OrderedReady set scaled
// down while its remaining pod has been Ready for less than
// minReadySeconds. kube-controller-manager's processReplica stops at that
// pod (isRunningAndAvailable) before it gives the condemned pod's claim to
// the pod, and so must the host: under whenScaled Delete that reference is
// what lets the garbage collector delete the claim. Once the wait is over
// (here: minReadySeconds set back to 0), both give the claim to its pod and
// the scale-down deletes it.
func TestCondemnedClaimWaitsForMinReadySeconds(t *testing.T) {
	h := testenv.StartModule(t, cp.Kubeconfig, "guests/retention", "retention", 2)
	e := newEnv(t, setctl.Policy{WhenDeleted: setctl.Retain, WhenScaled: setctl.Delete}, ordered, startKubelet(t))

	// An hour is more than web-0 has been Ready: neither controller may
	// get past it.
	e.updateSet(func(s *appsv1.StatefulSet) {
		s.Spec.MinReadySeconds = 3600
		s.Spec.Replicas = new(int32(1))
	})
	e.awaitObserved()
	if s := e.set(); s.Status.AvailableReplicas >= s.Status.ReadyReplicas {
		t.Fatalf("kube-controller-manager counts %d of %d ready pods available; want web-0 not yet available", s.Status.AvailableReplicas, s.Status.ReadyReplicas)
	}
	e.awaitHostReconcile(h)
	if e.pod(1) == nil {
		t.Fatal("web-1 is gone: kube-controller-manager got past web-0 before it was available")
	}
	if got, want := refsShape(e.claim(1).OwnerReferences), target(e.policy, 1, inRange); got != want {
		t.Fatalf("data-web-1 has references %s while web-0 is not yet available; want %s, as kube-controller-manager leaves it", got, want)
	}

	e.updateSet(func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 0 })
	e.awaitPods(1)
	e.awaitClaim(1, gone, condemned)
	e.awaitClaim(0, present, inRange)
}

// awaitHostReconcile waits until h has reconciled the set on a view at
// least as new as every write made to it so far: it labels the set and
// waits for a reconcile after the label.
func (e *env) awaitHostReconcile(h *testenv.Host) {
	e.t.Helper()
	reconciles := func() float64 {
		m, err := h.Scrape()
		if err != nil {
			e.t.Fatal(err)
		}
		return m.Sum("kubeplug_reconciles_total", "module", "retention")
	}
	base := reconciles()
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{"e2e.kubeplug.dev/touched":"%d"}}}`, time.Now().UnixNano())
	if _, err := e.c.AppsV1().StatefulSets(e.ns).Patch(e.ctx, setName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
	testenv.Eventually(e.t, testenv.Timeout, "a reconcile of "+e.ns+"/"+setName, func() (bool, error) { return reconciles() > base, nil })
}
