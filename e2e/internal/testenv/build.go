package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	guestMu   sync.Mutex
	guests    = map[string]string{}
)

// Kubeplug builds host/cmd/kubeplug once per test binary and returns the
// binary's path. KUBEPLUG_BIN, when set, names a binary to use instead.
func Kubeplug() (string, error) {
	if bin := os.Getenv("KUBEPLUG_BIN"); bin != "" {
		return filepath.Abs(bin)
	}
	return binary("kubeplug", "host", "./cmd/kubeplug")
}

// binary builds pkg, from module directory dir of the repository, with
// args once per test binary into the scratch directory as name, and
// returns its path.
func binary(name, dir, pkg string, args ...string) (string, error) {
	if err := scratch(); err != nil {
		return "", err
	}
	bin := filepath.Join(buildDir, name)
	guestMu.Lock()
	defer guestMu.Unlock()
	if _, ok := guests[name]; ok {
		return bin, nil
	}
	cmd := exec.Command("go", append(append([]string{"build"}, args...), "-o", bin, pkg)...)
	cmd.Dir = filepath.Join(Root(), dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", name, err, out)
	}
	guests[name] = bin
	return bin, nil
}

// KubeplugOutput runs the kubeplug binary (Kubeplug) with args and returns
// what it printed on standard output; a failure carries its standard error.
func KubeplugOutput(args ...string) ([]byte, error) {
	bin, err := Kubeplug()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubeplug %s: %w\n%s", args[0], err, stderr.String())
	}
	return out, nil
}

// Guest builds the guest module in dir (relative to the repository root,
// e.g. "examples/warnretain") with stock Go for wasip1, or with npm and asc
// when dir holds an AssemblyScript Extism plugin (a package.json), once per
// test binary, and returns the .wasm file's path.
func Guest(dir string) (string, error) {
	if err := scratch(); err != nil {
		return "", err
	}
	guestMu.Lock()
	defer guestMu.Unlock()
	if p, ok := guests[dir]; ok {
		return p, nil
	}
	out := filepath.Join(buildDir, filepath.Base(dir)+".wasm")
	if _, err := os.Stat(filepath.Join(Root(), dir, "package.json")); err == nil {
		if err := buildAssemblyScript(dir, out); err != nil {
			return "", err
		}
		guests[dir] = out
		return out, nil
	}
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "./"+dir)
	cmd.Dir = Root()
	if filepath.Dir(dir) == "e2e/guests" {
		cmd.Dir = filepath.Join(Root(), "e2e")
		cmd.Args[len(cmd.Args)-1] = "./" + filepath.Join("guests", filepath.Base(dir))
	}
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build guest %s: %v\n%s", dir, err, b)
	}
	guests[dir] = out
	return out, nil
}

// buildAssemblyScript builds the AssemblyScript Extism plugin in dir (it has
// a package.json) as make guests does: npm ci with its lock file unless
// that is installed already, then its build script (asc).
func buildAssemblyScript(dir, out string) error {
	commands := [][]string{{"npm", "run", "--silent", "build", "--", "--outFile", out}}
	if !npmInstalled(filepath.Join(Root(), dir)) {
		commands = append([][]string{{"npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"}}, commands...)
	}
	for _, args := range commands {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = filepath.Join(Root(), dir)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build plugin %s: %s: %v\n%s", dir, args[:2], err, b)
		}
	}
	return nil
}

// npmInstalled reports whether dir's node_modules is what its lock file
// pins, as the Makefile decides it: installed after the lock last changed.
// npm ci would delete and install it again, under any other build reading
// it.
func npmInstalled(dir string) bool {
	installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if err != nil {
		return false
	}
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	return err == nil && installed.ModTime().After(lock.ModTime())
}

// ModuleCache is the directory of compiled modules the hosts StartHost
// starts share by default (kubeplug --cache-dir), for other kubeplug
// commands of the same test binary, such as webhook-config.
func ModuleCache() (string, error) {
	if err := scratch(); err != nil {
		return "", err
	}
	return filepath.Join(buildDir, "cache"), nil
}

func scratch() error {
	buildOnce.Do(func() { buildDir, buildErr = os.MkdirTemp("", "kubeplug-e2e-build-") })
	return buildErr
}

// Cleanup removes what Kubeplug and Guest built; call it from TestMain.
func Cleanup() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}
