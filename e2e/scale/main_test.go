package scale

import (
	"os"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

var cp *controlplane.ControlPlane

// TestMain starts kube-apiserver and etcd alone: the numbers are the host's,
// and a controller manager would only add load of its own.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &cp, testenv.MainOptions{})) }
