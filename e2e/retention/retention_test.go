package retention

import (
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestRetentionBesideKCM plays every scenario of the proposal's test plan
// under each of the four policies, in each mode (Parallel sets whose pods
// never run; OrderedReady sets whose pods the kubelet stand-in runs), each
// in its own namespace, all at once, with one host running the retention
// module beside kube-controller-manager. Each scenario asserts which claims
// survive and that no claim's owner references ever went back to a value
// they had left; once all are done, the host's writes, from its /metrics
// and events, are compared with the recorded changes.
func TestRetentionBesideKCM(t *testing.T) {
	h := testenv.StartModule(t, cp.Kubeconfig, "guests/retention", "retention", 8)
	kl := startKubelet(t)

	rep := &report{}
	// Cleanups run once every parallel subtest is done; registered after
	// the host's, this one runs while the host still does.
	t.Cleanup(func() { rep.attribute(t, h) })
	for _, m := range []mode{parallel, ordered} {
		for _, sc := range scenarios {
			if !sc.runsIn(m) {
				continue
			}
			for _, p := range setctl.Policies() {
				t.Run(m.String()+"/"+sc.name+"/"+p.Name(), func(t *testing.T) {
					t.Parallel()
					e := newEnv(t, p, m, kl)
					sc.run(e)
					for ord, o := range sc.want(p) {
						e.awaitClaim(int32(ord), o, sc.end)
					}
					rep.add(e.check(sc))
				})
			}
		}
	}
}

// startKubelet starts the kubelet stand-in, with its own user agent, until
// t ends.
func startKubelet(t *testing.T) *kubelet.Kubelet {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.UserAgent = "kubeplug-e2e-kubelet"
	cfg.QPS, cfg.Burst = -1, 0
	kl, err := kubelet.Start(t.Context(), kubernetes.NewForConfigOrDie(cfg), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kl.Stop)
	return kl
}
