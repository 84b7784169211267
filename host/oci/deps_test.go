package oci_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDependencies keeps oci a supplier of bytes: it reads host
// configuration entries, and neither runs modules nor talks to Kubernetes.
func TestDependencies(t *testing.T) {
	const pkg = "github.com/kubeplug/kubeplug/host/oci"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
	require.NoError(t, err, "go list -deps %s:\n%s", pkg, out)
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == pkg, dep == "github.com/kubeplug/kubeplug/host/config",
			dep == "github.com/kubeplug/kubeplug/host/runtime",        // config's Limits
			dep == "github.com/kubeplug/kubeplug/host/internal/input", // bounded reads of keys
			strings.HasPrefix(dep, "github.com/kubeplug/kubeplug/host/runtime/internal/"):
		case strings.HasPrefix(dep, "github.com/kubeplug/kubeplug/host/"),
			strings.HasPrefix(dep, "k8s.io/client-go"):
			t.Errorf("%s depends on %s; it may import host/config and no other host package, and no Kubernetes client", pkg, dep)
		}
	}
}
