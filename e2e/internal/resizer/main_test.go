package resizer_test

import (
	"os"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

var cp *controlplane.ControlPlane

// TestMain starts kube-apiserver and etcd but no controllers: the stand-in
// is what binds and grows the claims, and the API server's validation of
// its writes (status subresource, preconditions, what may change on a
// bound claim) is what the tests are after.
func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &cp, testenv.MainOptions{Parallel: 8}))
}
