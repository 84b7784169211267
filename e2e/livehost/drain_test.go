package livehost

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// spinForSeconds is a protect spin count that keeps a reconcile in the
// guest for seconds, long after the test has seen it start and signalled.
const spinForSeconds = "{spin: 1000000000}"

// TestSigtermDrainsReconcilesInFlight: SIGTERM while a reconcile is in the
// guest lets it finish and carry out its action; the host exits 0 after
// that, and with --leader-elect it has given up its Lease.
func TestSigtermDrainsReconcilesInFlight(t *testing.T) {
	for _, leaderElect := range []bool{false, true} {
		t.Run(fmt.Sprintf("leader-elect=%v", leaderElect), func(t *testing.T) {
			ns := namespace(t)
			t.Cleanup(func() { removeFinalizers(t, ns) })
			var args []string
			if leaderElect {
				args = []string{"--leader-elect", "--leader-elect-namespace", ns, "--leader-elect-identity", "a"}
			}
			h := testenv.StartHost(t, testenv.HostOptions{
				Kubeconfig: cp.Kubeconfig,
				Config: "reconcileTimeout: 5m\nmodules:\n" + moduleYAML(guest(t, "e2e/guests/protect"), "protect", ns, spinForSeconds) +
					"  limits: {timeout: 5m}\n",
				Args: args,
			})
			h.WaitReady(t)
			createSet(t, ns, "web", 1)

			testenv.Eventually(t, wait, "web's reconcile in the guest", func() (bool, error) {
				if h.Exited() {
					return false, fmt.Errorf("host exited:\n%s", h.Log())
				}
				return strings.Contains(h.Log(), "spinning before answering for "+ns+"/web"), nil
			})
			if n, _ := protected(t, ns); n != 0 || strings.Contains(h.Log(), "executed action") {
				t.Fatal("web's reconcile finished before SIGTERM: raise the spin count so that it is still in flight")
			}
			if leaderElect {
				if holder := leaseHolder(t, ns); holder != "a" {
					t.Fatalf("lease held by %q while a reconciles, want a", holder)
				}
			}
			if err := h.Stop(syscall.SIGTERM, wait); err != nil {
				t.Fatalf("host did not exit 0 on SIGTERM: %v\n%s", err, h.Log())
			}

			if n, _ := protected(t, ns); n != 1 {
				t.Errorf("after exit %d claims carry %s; the reconcile in flight at SIGTERM must finish and write it", n, protectFinalizer)
			}
			// The event of that write is sent before the host exits, not
			// dropped with the event broadcaster's queue.
			evs, err := client(t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=FinalizerAdded"})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs.Items) != 1 {
				t.Errorf("after exit %d FinalizerAdded events in %s, want 1: the host exited without recording its last write", len(evs.Items), ns)
			}
			if leaderElect {
				if holder := leaseHolder(t, ns); holder != "" {
					t.Errorf("lease still held by %q after a clean exit; want it released", holder)
				}
			}
		})
	}
}

// leaseHolder returns the holder of the kubeplug Lease in ns, "" for none.
func leaseHolder(t *testing.T, ns string) string {
	t.Helper()
	lease, err := client(t).CoordinationV1().Leases(ns).Get(context.Background(), "kubeplug", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}
