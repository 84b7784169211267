package csitest_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDependencies keeps csitest usable outside a test function and free of
// the host: it reports errors, not to a *testing.T.
func TestDependencies(t *testing.T) {
	const pkg = "github.com/kubeplug/kubeplug/host/csi/csitest"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).CombinedOutput()
	require.NoError(t, err, "go list -deps %s:\n%s", pkg, out)
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == pkg:
		case dep == "testing",
			strings.HasPrefix(dep, "github.com/stretchr/testify"),
			strings.HasPrefix(dep, "github.com/kubeplug/kubeplug"),
			strings.HasPrefix(dep, "k8s.io/"):
			t.Errorf("%s depends on %s; it may import only the standard library (not testing), the CSI spec and gRPC", pkg, dep)
		}
	}
}
