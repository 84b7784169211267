package runtime_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The runtime knows nothing of Kubernetes: it imports the standard library,
// wazero, abi, its own internal packages and (for Extism plugins) Extism's
// go-sdk only, and nothing it links reaches k8s.io or the rest of the host.
func TestImportsOnlyWazeroAndABI(t *testing.T) {
	const internal = "github.com/kubeplug/kubeplug/host/runtime/internal/"
	out, err := exec.Command("go", "list", "-f", "{{join .Imports \"\\n\"}}\n--\n{{join .Deps \"\\n\"}}", ".").CombinedOutput()
	require.NoError(t, err, string(out))
	imports, deps, _ := strings.Cut(string(out), "--\n")
	for _, imp := range strings.Fields(imports) {
		first, _, _ := strings.Cut(imp, "/")
		stdlib := !strings.Contains(first, ".")
		ok := stdlib || strings.HasPrefix(imp, "github.com/tetratelabs/wazero") || imp == "github.com/kubeplug/kubeplug/abi" ||
			strings.HasPrefix(imp, internal) || imp == "github.com/extism/go-sdk"
		require.True(t, ok, "runtime imports %s", imp)
	}
	for _, dep := range strings.Fields(deps) {
		require.False(t, strings.HasPrefix(dep, "k8s.io/"), "runtime links %s", dep)
		if !strings.HasPrefix(dep, internal) {
			require.False(t, strings.HasPrefix(dep, "github.com/kubeplug/kubeplug/host/"), "runtime links %s", dep)
		}
	}
}
