package retention

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestClaimBornOwned is issue 24's seed 2400 made deterministic: a set
// with whenDeleted Delete is scaled from 3 to 4 and deleted (background
// propagation) the moment kube-controller-manager has created the new
// claim, before anyone could have written the claim's owner reference
// after its creation. With retention's admit hook registered with the real
// kube-apiserver, the claim is born with the set's controller reference,
// and the garbage collector deletes it with the set.
//
// The scale-up is held back (the kubelet stand-in reports pod web-2 not
// Ready, so that kube-controller-manager, under OrderedReady, does not
// create replica 3) until a dry-run creation of data-web-3 comes back
// stamped: then the API server calls the hook and the host's caches hold
// the set with four replicas. Nothing is timed.
func TestClaimBornOwned(t *testing.T) {
	wasm, err := testenv.Guest("guests/retention")
	if err != nil {
		t.Fatal(err)
	}
	p := setctl.Policy{WhenDeleted: setctl.Delete, WhenScaled: setctl.Retain}
	kl := startKubelet(t)
	e := &env{t: t, ctx: t.Context(), c: client(t), policy: p, mode: ordered, kl: kl}
	e.ns = testenv.Namespace(t, e.c)
	e.rec = record(t, e.ns)
	kl.Serve(e.ns)

	certDir, caFile := testenv.ServingCert(t)
	addr := testenv.FreeAddr(t)
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig,
		// namespaces: the webhook's namespaceSelector keeps the other
		// tests' claims away from this host.
		Config: fmt.Sprintf("modules:\n- path: %s\n  name: retention\n  namespaces: [%s]\n%s%s",
			wasm, e.ns, testenv.Allow["guests/retention"], testenv.Admission["guests/retention"]),
		Args: []string{"--webhook-addr", addr, "--webhook-cert-dir", certDir},
	})
	h.WaitReady(t)
	testenv.RegisterWebhooks(t, e.c, h.ConfigPath, addr, caFile)

	set := setctl.NewStatefulSet(e.ns, setName, template, p, 3)
	set.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	created, err := e.c.AppsV1().StatefulSets(e.ns).Create(e.ctx, set, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.awaitPods(3)

	release := kl.HoldUnready(e.ns, setctl.PodName(setName, 2))
	defer release()
	testenv.Eventually(t, testenv.Timeout, "pod web-2 reported not Ready", func() (bool, error) {
		p := e.pod(2)
		return p != nil && !kubelet.RunningAndReady(p), nil
	})
	e.scale(4)

	name := setctl.ClaimName(template, setName, 3)
	// What reconcile (and kube-controller-manager) would write: the set's
	// controller reference.
	want := setctl.Owners(created, nil, false)
	testenv.Eventually(t, testenv.Timeout, "a dry-run creation of "+name+" stamped by retention's hook", func() (bool, error) {
		probe := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: map[string]string{"app": setName}},
			Spec:       set.Spec.VolumeClaimTemplates[0].Spec,
		}
		out, err := e.c.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return setctl.SameOwners(out.OwnerReferences, want), nil
	})

	release()
	testenv.Eventually(t, testenv.Timeout, "kube-controller-manager creates "+name, func() (bool, error) {
		return e.claim(3) != nil, nil
	})
	if err := (&setctl.Set{Client: e.c, Namespace: e.ns, Name: setName}).Delete(e.ctx, metav1.DeletePropagationBackground); err != nil {
		t.Fatal(err)
	}
	for ord := range int32(4) {
		e.awaitClaim(ord, gone, inRange)
	}

	hist, err := e.rec.histories()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range hist {
		if c.name != name {
			continue
		}
		found = true
		if !setctl.SameOwners(c.initial, want) {
			t.Errorf("%s was created with owner references %v, want the set's controller reference only, %v", name, c.initial, want)
		}
	}
	if !found {
		t.Errorf("the recorder never saw %s", name)
	}
	m, err := h.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Sum("kubeplug_hook_calls_total", "module", "retention", "hook", "admit", "result", "mutated"); n < 2 {
		t.Errorf("retention's admit hook mutated %v claims, want the probe's and %s at least", n, name)
	}
}
