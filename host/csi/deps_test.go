package csi_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDependencies keeps csi a gRPC client that needs no Kubernetes client:
// Secrets reach it through SecretGetter.
func TestDependencies(t *testing.T) {
	const pkg = "github.com/kubeplug/kubeplug/host/csi"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
	require.NoError(t, err, "go list -deps %s:\n%s", pkg, out)
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == pkg, dep == "github.com/kubeplug/kubeplug/host/config", dep == "github.com/kubeplug/kubeplug/host/runtime",
			dep == "github.com/kubeplug/kubeplug/host/internal/input",                     // config's bounded reads
			strings.HasPrefix(dep, "github.com/kubeplug/kubeplug/host/runtime/internal/"): // part of runtime
		case strings.HasPrefix(dep, "github.com/kubeplug/kubeplug/host/"),
			strings.HasPrefix(dep, "k8s.io/client-go"),
			strings.HasPrefix(dep, "k8s.io/api/"):
			t.Errorf("%s depends on %s; it may import only host/config of the host packages and no Kubernetes client or API types", pkg, dep)
		}
	}
}
