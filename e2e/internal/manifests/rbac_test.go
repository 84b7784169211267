package manifests_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/e2e/internal/manifests"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestRBACIsGenerated holds the RBAC every install ships to what `kubeplug
// rbac` derives from its own host.yaml, the image's modules read from a
// build (--modules-dir): the kustomize files are what hack/gen-rbac.sh (make
// rbac) writes, to the byte, and what the base, each overlay and the chart
// install grants, with the flags each runs the host with, is the command's
// grants exactly: nothing missing, nothing more.
func TestRBACIsGenerated(t *testing.T) {
	bin, err := testenv.Kubeplug()
	if err != nil {
		t.Fatal(err)
	}
	guests := guestsDir(t)
	t.Run("files", func(t *testing.T) {
		out := t.TempDir()
		cmd := exec.Command(filepath.Join(manifests.Root(), "hack", "gen-rbac.sh"), out)
		cmd.Env = append(os.Environ(), "KUBEPLUG="+bin, "GUESTDIR="+guests)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hack/gen-rbac.sh: %v\n%s", err, b)
		}
		for _, dir := range []string{"deploy/base", "deploy/overlays/webhook", "deploy/overlays/shard"} {
			want, err := os.ReadFile(filepath.Join(out, dir, "rbac.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(manifests.Root(), dir, "rbac.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s/rbac.yaml is not what its host.yaml gives: run make rbac\n--- it has\n%s\n--- kubeplug rbac prints\n%s", dir, got, want)
			}
		}
	})
	for _, tc := range []struct {
		dir  string
		args []string
	}{
		{"deploy", []string{"--leader-elect"}},
		{"deploy/overlays/webhook", []string{"--leader-elect", "--webhook-cert-secret", "kubeplug-system/kubeplug-webhook-tls"}},
		{"deploy/overlays/shard", []string{"--leader-elect", "--leader-elect-name", "kubeplug-shard-a"}},
	} {
		t.Run("kustomize "+tc.dir, func(t *testing.T) {
			_, objs, err := manifests.Kustomize(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			requireGenerated(t, guests, objs, "kubeplug-config", tc.args...)
		})
	}
	t.Run("chart", func(t *testing.T) {
		_, objs, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kubeplug-system"})
		if err != nil {
			t.Fatal(err)
		}
		requireGenerated(t, guests, objs, "kubeplug-config", "--leader-elect")
	})
	t.Run("chart, other release and namespace, csiDrivers, webhook", func(t *testing.T) {
		_, objs, err := manifests.Helm(manifests.Release{Name: "kp", Namespace: "storage", Values: map[string]any{
			"hostConfig": map[string]any{"csiDrivers": []any{map[string]any{"name": "csi.example.dev", "endpoint": "unix:///var/run/csi/csi.sock"}}},
			"webhook":    map[string]any{"enabled": true, "mutating": []any{templateUpdateHook}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		requireGenerated(t, guests, objs, "kp-kubeplug-config", "--service-account", "storage/kp-kubeplug",
			"--leader-elect", "--leader-elect-name", "kp-kubeplug", "--webhook-cert-secret", "storage/kp-kubeplug-webhook-tls",
			"--webhook-config-name", "kp-kubeplug")
	})
}

// requireGenerated fails t unless objs grant exactly what kubeplug rbac
// prints for the host.yaml of their ConfigMap configMap, run with args.
func requireGenerated(t *testing.T, guests string, objs []*unstructured.Unstructured, configMap string, args ...string) {
	t.Helper()
	cm := manifests.Find(objs, "ConfigMap", configMap)
	if cm == nil {
		t.Fatalf("no ConfigMap %s", configMap)
	}
	hostYAML, _, _ := unstructured.NestedString(cm.Object, "data", "host.yaml")
	var file map[string]any
	if err := yaml.Unmarshal([]byte(hostYAML), &file); err != nil {
		t.Fatalf("host.yaml: %v", err)
	}
	installed := grants(t, objs)
	want := grants(t, generate(t, file, append([]string{"--modules-dir", guests}, args...)))
	for _, g := range want {
		if !slices.Contains(installed, g) {
			t.Errorf("kubeplug rbac grants %s; the install does not", g)
		}
	}
	for _, g := range installed {
		if !slices.Contains(want, g) {
			t.Errorf("the install grants %s; kubeplug rbac does not", g)
		}
	}
}

// guestsDir builds the reference modules the shipped host.yaml files name
// under /modules/, and returns the directory they are in.
func guestsDir(t *testing.T) string {
	t.Helper()
	var dir string
	for _, g := range []string{"guests/retention", "guests/reclaim", "guests/templateupdate"} {
		wasm, err := testenv.Guest(g)
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Dir(wasm)
	}
	return dir
}

// generate runs kubeplug rbac on host.yaml's content and decodes what it
// prints.
func generate(t *testing.T, file map[string]any, args []string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifests.Decode(string(run(t, file, args)))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// run runs kubeplug rbac on host.yaml's content and returns what it prints.
func run(t *testing.T, file map[string]any, args []string) []byte {
	t.Helper()
	b, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "host.yaml")
	if err := os.WriteFile(config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	printed, err := testenv.KubeplugOutput(append([]string{"rbac", "--config", config, "--cache-dir", ""}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return printed
}

// grants flattens the ClusterRoles' and Roles' rules into one string per
// namespace, group, resource, name and verb.
func grants(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		var rules []rbacv1.PolicyRule
		ns := "(cluster)"
		switch o.GetKind() {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
				t.Fatal(err)
			}
			rules = r.Rules
		case "Role":
			var r rbacv1.Role
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
				t.Fatal(err)
			}
			rules, ns = r.Rules, r.Namespace
		default:
			continue
		}
		for _, r := range rules {
			names := r.ResourceNames
			if len(names) == 0 {
				names = []string{"*"}
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, n := range names {
						for _, v := range r.Verbs {
							out = append(out, ns+" "+g+"/"+res+" "+n+" "+v)
						}
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestChartNamespacedRules installs, through the chart's values, what
// `kubeplug rbac -o helm` prints for a module limited to namespaces:
// (rbac.rules and rbac.namespacedRules), and checks the chart renders the
// same grants as `kubeplug rbac -o yaml` for that host.yaml: a Role and
// its RoleBinding in each namespace, the release's own namespace's rules
// in the release's Role.
func TestChartNamespacedRules(t *testing.T) {
	file := map[string]any{"modules": []any{map[string]any{
		"path":       "/modules/retention.wasm",
		"namespaces": []any{"team-a", "kubeplug-system"},
		"allow": []any{
			map[string]any{"action": "updateOwnerReferences", "resources": []any{"persistentvolumeclaims"}},
			map[string]any{"action": "event", "resources": []any{"statefulsets"}},
			map[string]any{"action": "mutate", "resources": []any{"persistentvolumeclaims"}, "paths": []any{"/metadata/ownerReferences"}},
		},
	}}}
	guests := guestsDir(t)
	values := helmValues(t, guests, file)
	ns, _, _ := unstructured.NestedMap(values, "rbac", "namespacedRules")
	if _, ok := ns["team-a"]; !ok {
		t.Fatalf("kubeplug rbac -o helm printed no rules for team-a: %v", values)
	}
	values["leaderElection"] = map[string]any{"enabled": false}
	_, objs, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kubeplug-system", Values: values})
	if err != nil {
		t.Fatal(err)
	}
	want := grants(t, generate(t, file, []string{"--modules-dir", guests}))
	got := grants(t, objs)
	if !slices.Equal(got, want) {
		t.Errorf("the chart renders\n%s\nkubeplug rbac -o yaml prints\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var bound bool
	for _, o := range objs {
		if o.GetKind() != "RoleBinding" || o.GetNamespace() != "team-a" {
			continue
		}
		var b rbacv1.RoleBinding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
			t.Fatal(err)
		}
		bound = b.RoleRef.Kind == "Role" && b.RoleRef.Name == "kubeplug" && len(b.Subjects) == 1 &&
			b.Subjects[0].Kind == "ServiceAccount" && b.Subjects[0].Namespace == "kubeplug-system" && b.Subjects[0].Name == "kubeplug"
	}
	if !bound {
		t.Error("no RoleBinding in team-a binds the Role kubeplug to the ServiceAccount kubeplug-system/kubeplug")
	}

	// --set rbac.namespacedRules=null removes the value: no Roles beyond the release's.
	if _, _, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kubeplug-system",
		Values: map[string]any{"rbac": map[string]any{"namespacedRules": nil}}}); err != nil {
		t.Errorf("rbac.namespacedRules null: %v", err)
	}
}

// helmValues is what kubeplug rbac -o helm prints for file, as values.
func helmValues(t *testing.T, guests string, file map[string]any) map[string]any {
	t.Helper()
	printed := run(t, file, []string{"-o", "helm", "--modules-dir", guests})
	var v map[string]any
	if err := yaml.Unmarshal(printed, &v); err != nil {
		t.Fatalf("kubeplug rbac -o helm: %v\n%s", err, printed)
	}
	return v
}
