package manifests_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubeplug/kubeplug/e2e/internal/manifests"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// hostAllowance is what the host needs besides its modules on a small
// cluster: its caches, webhook and probes servers, client-go. README.md,
// "Sizing", has the measurement and how it grows with the objects cached.
const hostAllowance = 128 << 20

// TestSizing holds every install's memory limit to its modules' bounds:
// what `kubeplug size` says the modules of its host.yaml, with their
// limits: and the hooks the host calls, can make the host hold, plus the
// host's own allowance, fits under the container's limit; and GOMEMLIMIT
// leaves the modules' wasm memories, which it does not see, room under it.
func TestSizing(t *testing.T) {
	guests := guestsDir(t)
	type install struct {
		objs                  []*unstructured.Unstructured
		deployment, configMap string
		webhook               bool
	}
	installs := map[string]install{}
	for dir, webhook := range map[string]bool{"deploy": false, "deploy/overlays/webhook": true, "deploy/overlays/shard": false} {
		_, objs, err := manifests.Kustomize(dir)
		if err != nil {
			t.Fatal(err)
		}
		installs[dir] = install{objs, "kubeplug", "kubeplug-config", webhook}
	}
	for name, values := range map[string]map[string]any{
		"chart":              nil,
		"chart with webhook": {"webhook": map[string]any{"enabled": true, "mutating": []any{templateUpdateHook}}},
	} {
		_, objs, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kubeplug-system", Values: values})
		if err != nil {
			t.Fatal(err)
		}
		installs[name] = install{objs, "kubeplug", "kubeplug-config", values != nil}
	}
	for name, in := range installs {
		t.Run(name, func(t *testing.T) {
			data, _, _ := unstructured.NestedString(manifests.Find(in.objs, "ConfigMap", in.configMap).Object, "data", "host.yaml")
			config := filepath.Join(t.TempDir(), "host.yaml")
			if err := os.WriteFile(config, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"size", "--config", config, "--modules-dir", guests, "--cache-dir", "", "-o", "json"}
			if in.webhook {
				args = append(args, "--webhook")
			}
			out, err := testenv.KubeplugOutput(args...)
			if err != nil {
				t.Fatal(err)
			}
			var size struct{ Total, LinearMemory uint64 }
			if err := json.Unmarshal(out, &size); err != nil {
				t.Fatalf("kubeplug size -o json: %v\n%s", err, out)
			}
			c := deployment(t, in.objs, in.deployment).Spec.Template.Spec.Containers[0]
			limit := uint64(c.Resources.Limits.Memory().Value())
			if need := size.Total + hostAllowance; limit < need {
				t.Errorf("memory limit %s: the modules can make the host hold %d MiB (kubeplug size), the host itself needs %d MiB: at least %d MiB",
					c.Resources.Limits.Memory(), size.Total>>20, hostAllowance>>20, need>>20)
			}
			mib, err := strconv.ParseUint(strings.TrimSuffix(env(c, "GOMEMLIMIT").Value, "MiB"), 10, 64)
			if err != nil {
				t.Fatalf("GOMEMLIMIT %q: %v", env(c, "GOMEMLIMIT").Value, err)
			}
			if mib<<20+size.LinearMemory > limit {
				t.Errorf("GOMEMLIMIT %d MiB and the modules' wasm memories, %d MiB, are more than the memory limit %s",
					mib, size.LinearMemory>>20, c.Resources.Limits.Memory())
			}
		})
	}
}
