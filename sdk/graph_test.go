package sdk_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuestModuleGraph builds a guest from a throwaway module that imports
// only sdk and abi, as a vendor would, and checks that its module graph and
// its linked packages hold nothing large: no k8s.io, no sigs.k8s.io, no
// wazero. It needs the module proxy, or a module cache that has msgp.
func TestGuestModuleGraph(t *testing.T) {
	root := repoRoot(t)
	dir := t.TempDir()
	goVersion := goDirective(t, filepath.Join(root, "go.mod"))
	write(t, filepath.Join(dir, "go.mod"), "module example.com/throwaway\n\ngo "+goVersion+"\n\n"+
		"require github.com/kubeplug/kubeplug v0.0.0\n\n"+
		"replace github.com/kubeplug/kubeplug => "+root+"\n")
	write(t, filepath.Join(dir, "main.go"), `package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

func main() {}

func init() {
	sdk.Register(sdk.Module{
		Name: "throwaway", Version: "0.0.0", Subject: abi.SubjectStatefulSet,
		Reconcile: func(req *sdk.Request) (sdk.Result, error) {
			if set := req.StatefulSet(); set != nil {
				return sdk.Result{Actions: []abi.Action{sdk.Normal(sdk.RefOf(set), "Seen", "hello")}}, nil
			}
			return sdk.Result{}, nil
		},
	})
}
`)

	goCmd(t, dir, nil, "mod", "tidy")

	for _, line := range strings.Split(goCmd(t, dir, nil, "list", "-m", "all"), "\n") {
		for _, banned := range []string{"k8s.io/", "sigs.k8s.io/", "github.com/tetratelabs/wazero"} {
			if strings.HasPrefix(line, banned) {
				t.Errorf("the guest's module graph holds %q", line)
			}
		}
	}

	wasm := []string{"GOOS=wasip1", "GOARCH=wasm"}
	deps := goCmd(t, dir, wasm, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
	allowed := []string{"example.com/throwaway", "github.com/kubeplug/kubeplug/", "github.com/tinylib/msgp/", "github.com/philhofer/fwd"}
	for _, pkg := range strings.Fields(deps) {
		ok := false
		for _, a := range allowed {
			ok = ok || strings.HasPrefix(pkg, a)
		}
		if !ok {
			t.Errorf("the guest links %s; a guest may link only the sdk, abi and the MessagePack runtime", pkg)
		}
	}

	out := filepath.Join(dir, "throwaway.wasm")
	goCmd(t, dir, wasm, "build", "-buildmode=c-shared", "-o", out, ".")
	if b, err := os.ReadFile(out); err != nil || !bytes.HasPrefix(b, []byte("\x00asm")) {
		t.Errorf("the build did not produce a wasm module: %v", err)
	}
}

// goCmd runs the go command in dir for a module outside the repository's
// workspace, and returns its standard output.
func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	bin := "go"
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		bin = filepath.Join(goroot, "bin", "go")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// repoRoot finds the root module's directory above the working directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/kubeplug/kubeplug\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of module github.com/kubeplug/kubeplug above the working directory")
		}
		dir = parent
	}
}

func goDirective(t *testing.T, gomod string) string {
	t.Helper()
	b, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no go directive", gomod)
	return ""
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
