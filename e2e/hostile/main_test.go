package hostile

import (
	"fmt"
	"os"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

var cp *controlplane.ControlPlane

// cacheDir holds the modules' compilations and the built corpus, shared by
// the hosts of the package: each module is compiled once.
var cacheDir string

// TestMain starts kube-apiserver with the garbage collector and the claim
// protection controller: an owner reference a module slips onto a claim then
// has the effect it would have on a real cluster.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kubeplug-e2e-hostile-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cacheDir = dir
	code := testenv.Main(m, &cp, testenv.MainOptions{
		ControlPlane: controlplane.Options{Controllers: []string{
			"garbage-collector-controller",
			"persistentvolumeclaim-protection-controller",
		}},
	})
	os.RemoveAll(dir)
	os.Exit(code)
}
