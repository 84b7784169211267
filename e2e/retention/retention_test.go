package retention

import (
	"testing"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestRetentionBesideKCM plays every scenario of the proposal's test plan
// under each of the four policies, each in its own namespace, all at once,
// with one host running the retention module beside kube-controller-manager.
// Each scenario asserts which claims survive and that no claim's owner
// references ever went back to a value they had left; the end compares the
// host's writes, from its /metrics and events, with the recorded changes.
func TestRetentionBesideKCM(t *testing.T) {
	h := testenv.StartModule(t, cp.Kubeconfig, "guests/retention", "retention", 8)

	rep := &report{}
	t.Run("scenarios", func(t *testing.T) {
		for _, sc := range scenarios {
			for _, p := range setctl.Policies() {
				t.Run(sc.name+"/"+p.Name(), func(t *testing.T) {
					t.Parallel()
					e := newEnv(t, p)
					sc.run(e)
					for ord, o := range sc.want(p) {
						e.awaitClaim(int32(ord), o, sc.end)
					}
					rep.add(e.check(sc))
				})
			}
		}
	})
	rep.attribute(t, h)
}
