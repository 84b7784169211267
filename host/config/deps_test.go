package config_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDependencies keeps config a reader of files: it may use
// host/runtime's Limits and host/internal/input's bounded readers, but no
// Kubernetes client and no other host package.
func TestDependencies(t *testing.T) {
	const pkg = "github.com/kubeplug/kubeplug/host/config"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
	require.NoError(t, err, "go list -deps %s:\n%s", pkg, out)
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == pkg, dep == "github.com/kubeplug/kubeplug/host/runtime", dep == "github.com/kubeplug/kubeplug/host/internal/input",
			strings.HasPrefix(dep, "github.com/kubeplug/kubeplug/host/runtime/internal/"): // part of runtime
		case strings.HasPrefix(dep, "github.com/kubeplug/kubeplug/host/"),
			strings.HasPrefix(dep, "k8s.io/client-go"),
			strings.HasPrefix(dep, "k8s.io/api/"):
			t.Errorf("%s depends on %s; it may import only host/runtime and host/internal/input of the host packages and no Kubernetes client or API types", pkg, dep)
		}
	}
}
