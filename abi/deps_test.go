package abi_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps the direction of imports: abi imports only the
// standard library and the MessagePack runtime, sdk adds only abi. Guests link
// both, so anything else here would land in every module.
func TestDependencies(t *testing.T) {
	allowed := map[string][]string{
		"github.com/kubeplug/kubeplug/abi": {"github.com/tinylib/msgp/", "github.com/philhofer/fwd"},
		"github.com/kubeplug/kubeplug/sdk": {"github.com/kubeplug/kubeplug/abi", "github.com/kubeplug/kubeplug/sdk", "github.com/tinylib/msgp/", "github.com/philhofer/fwd"},
	}
	for pkg, ok := range allowed {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
	deps:
		for _, dep := range strings.Fields(string(out)) {
			if dep == pkg {
				continue
			}
			for _, prefix := range ok {
				if strings.HasPrefix(dep, prefix) {
					continue deps
				}
			}
			t.Errorf("%s depends on %s; it may import only the standard library and %v", pkg, dep, ok)
		}
	}
}
