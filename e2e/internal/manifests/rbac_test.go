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

// TestRBACIsGenerated holds the RBAC the kustomize base and the chart's
// default values install to what `kubeplug rbac` derives from their own
// host.yaml: every grant it prints is installed, and nothing is installed
// beyond what it prints once host.yaml has csiDrivers (reclaim's
// deleteVolume reads the volume, claim and class, and the provisioner
// Secret; both grant deleteVolume, and a CSI driver is what an operator
// adds next). Both run the host with --leader-elect.
func TestRBACIsGenerated(t *testing.T) {
	bin, err := testenv.Kubeplug()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("kustomize base", func(t *testing.T) {
		_, objs, err := manifests.Kustomize("deploy")
		if err != nil {
			t.Fatal(err)
		}
		requireGenerated(t, bin, objs, "kubeplug-config", "--leader-elect")
	})
	t.Run("kustomize webhook overlay", func(t *testing.T) {
		_, objs, err := manifests.Kustomize("deploy/overlays/webhook")
		if err != nil {
			t.Fatal(err)
		}
		requireGenerated(t, bin, objs, "kubeplug-config", "--leader-elect",
			"--webhook-cert-secret", "kubeplug-system/kubeplug-webhook-tls", "--webhook-config-name", "kubeplug")
	})
	t.Run("chart", func(t *testing.T) {
		_, objs, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kubeplug-system"})
		if err != nil {
			t.Fatal(err)
		}
		requireGenerated(t, bin, objs, "kubeplug-config", "--leader-elect")
	})
}

func requireGenerated(t *testing.T, bin string, objs []*unstructured.Unstructured, configMap string, args ...string) {
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
	need := grants(t, generate(t, bin, file, args))
	file["csiDrivers"] = []any{map[string]any{"name": "csi.example.dev", "endpoint": "unix:///var/run/csi/csi.sock"}}
	withCSI := grants(t, generate(t, bin, file, args))
	for _, g := range need {
		if !covered(g, installed) {
			t.Errorf("kubeplug rbac grants %s; the installed RBAC does not", g)
		}
	}
	for _, g := range installed {
		if !covered(g, withCSI) {
			t.Errorf("the installed RBAC grants %s; kubeplug rbac does not, even with csiDrivers", g)
		}
	}
}

// generate runs kubeplug rbac on host.yaml's content and decodes what it
// prints.
func generate(t *testing.T, bin string, file map[string]any, args []string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifests.Decode(string(run(t, bin, file, args)))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// run runs kubeplug rbac on host.yaml's content, its modules read from the
// build instead of the image's /modules, and returns what it prints.
func run(t *testing.T, bin string, file map[string]any, args []string) []byte {
	t.Helper()
	mods, _ := file["modules"].([]any)
	var out []any
	for _, m := range mods {
		entry := map[string]any{}
		for k, v := range m.(map[string]any) {
			entry[k] = v
		}
		path, _ := entry["path"].(string)
		name, ok := strings.CutPrefix(path, "/modules/")
		if !ok {
			t.Fatalf("host.yaml module %q: want the image's /modules/NAME.wasm", path)
		}
		name = strings.TrimSuffix(name, ".wasm")
		dir := "guests/" + name
		if _, err := os.Stat(filepath.Join(manifests.Root(), dir)); err != nil {
			dir = "examples/" + name
		}
		wasm, err := testenv.Guest(dir)
		if err != nil {
			t.Fatal(err)
		}
		entry["path"] = wasm
		out = append(out, entry)
	}
	copied := map[string]any{}
	for k, v := range file {
		copied[k] = v
	}
	copied["modules"] = out
	b, err := yaml.Marshal(copied)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "host.yaml")
	if err := os.WriteFile(config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"rbac", "--config", config, "--cache-dir", ""}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	printed, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubeplug rbac: %v\n%s", err, stderr.String())
	}
	return printed
}

// covered reports whether grant g is in set, or a grant of set gives it:
// the same for any name, or cluster-wide.
func covered(g string, set []string) bool {
	f := strings.Fields(g)
	for _, ns := range []string{f[0], "(cluster)"} {
		for _, name := range []string{f[2], "*"} {
			if slices.Contains(set, ns+" "+f[1]+" "+name+" "+f[3]) {
				return true
			}
		}
	}
	return false
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
	bin, err := testenv.Kubeplug()
	if err != nil {
		t.Fatal(err)
	}
	file := map[string]any{"modules": []any{map[string]any{
		"path":       "/modules/retention.wasm",
		"namespaces": []any{"team-a", "kubeplug-system"},
		"allow": []any{
			map[string]any{"action": "updateOwnerReferences", "resources": []any{"persistentvolumeclaims"}},
			map[string]any{"action": "event", "resources": []any{"statefulsets"}},
			map[string]any{"action": "mutate", "resources": []any{"persistentvolumeclaims"}, "paths": []any{"/metadata/ownerReferences"}},
		},
	}}}
	values := helmValues(t, bin, file)
	ns, _, _ := unstructured.NestedMap(values, "rbac", "namespacedRules")
	if _, ok := ns["team-a"]; !ok {
		t.Fatalf("kubeplug rbac -o helm printed no rules for team-a: %v", values)
	}
	values["leaderElection"] = map[string]any{"enabled": false}
	_, objs, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kubeplug-system", Values: values})
	if err != nil {
		t.Fatal(err)
	}
	want := grants(t, generate(t, bin, file, nil))
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
func helmValues(t *testing.T, bin string, file map[string]any) map[string]any {
	t.Helper()
	printed := run(t, bin, file, []string{"-o", "helm"})
	var v map[string]any
	if err := yaml.Unmarshal(printed, &v); err != nil {
		t.Fatalf("kubeplug rbac -o helm: %v\n%s", err, printed)
	}
	return v
}
