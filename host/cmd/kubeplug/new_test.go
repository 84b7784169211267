package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
)

// TestNewModuleOutsideTheRepository: a module kubeplug new writes in a
// directory outside this repository tidies, passes its tests natively and
// against its compiled .wasm, passes kubeplug test on its case file, and
// make test does all of that, as a user following the README would.
func TestNewModuleOutsideTheRepository(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", "..", ".."))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "mypolicy")
	require.False(t, strings.HasPrefix(dir, repo+string(filepath.Separator)), "%s is inside the repository", dir)

	// No --kubeplug-source: the checkout this binary was built from.
	out, errOut, code := kubeplug(t, "", "new", "mypolicy", "--dir", dir)
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, "with "+repo)
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	require.Contains(t, string(gomod), "replace github.com/kubeplug/kubeplug => "+repo+"\n")

	self, err := filepath.Abs(os.Args[0])
	require.NoError(t, err)
	// The first download of the SDK's dependencies, if any, lands in the
	// module cache the repository's builds share; nothing the repository
	// does not depend on is needed.
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", envAsKubeplug+"=1")
	run := func(name string, extraEnv []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(append([]string(nil), env...), extraEnv...)
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), b)
		return string(b)
	}
	run("go", nil, "mod", "tidy")
	run("go", nil, "vet", "./...")
	run("go", nil, "test", "-count=1", "./...")
	wasm := filepath.Join(dir, "build", "mypolicy.wasm")
	run("go", []string{"GOOS=wasip1", "GOARCH=wasm"}, "build", "-buildmode=c-shared", "-o", wasm, ".")
	outWasm := run("go", []string{"KUBEPLUG_BIN=" + self, "KUBEPLUG_TEST_WASM=" + wasm}, "test", "-count=1", "-v", "./...")
	require.Contains(t, outWasm, "--- PASS: TestReconcile/whenScaled_Delete")

	out, errOut, code = kubeplug(t, "", "test", "--module", wasm, filepath.Join(dir, "testdata"))
	require.Equal(t, exitOK, code, out+errOut)
	require.Equal(t, 2, strings.Count(out, "PASS"), out)

	// The Makefile runs the kubeplug binary that wrote it: this test binary.
	if _, err := exec.LookPath("make"); err == nil {
		out := run("make", nil, "test")
		require.Contains(t, out, "KUBEPLUG_TEST_WASM="+wasm)
	}
}

func TestNewRefuses(t *testing.T) {
	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "keep.txt"), []byte("mine"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a name that is no DNS label", []string{"new", "My_Policy", "--dir", t.TempDir()}, `module name "My_Policy": want lower-case letters`},
		{"a name with a line of its own", []string{"new", "p\nreplace", "--dir", t.TempDir()}, `module name "p\nreplace": want lower-case letters`},
		{"a module path with a directive", []string{"new", "p", "--dir", filepath.Join(full, "p"), "--module-path", "example.com/x\nreplace github.com/kubeplug/kubeplug => ../evil"},
			`--module-path: malformed module path "example.com/x\nreplace github.com/kubeplug/kubeplug => ../evil": invalid char '\n'; give a Go module path such as example.com/p`},
		{"a module path without a domain", []string{"new", "p", "--dir", filepath.Join(full, "p"), "--module-path", "mypolicy"}, `malformed module path "mypolicy": missing dot in first path element`},
		{"a directory with files", []string{"new", "p", "--dir", full}, "exists and is not empty"},
		{"a source that is no checkout", []string{"new", "p", "--dir", filepath.Join(t.TempDir(), "p"), "--kubeplug-source", t.TempDir()}, "--kubeplug-source"},
		{"no name", []string{"new"}, "want the new module's name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := kubeplug(t, "", tc.args...)
			require.Equal(t, exitInput, code)
			require.Contains(t, errOut, tc.want)
		})
	}
	b, err := os.ReadFile(filepath.Join(full, "keep.txt"))
	require.NoError(t, err)
	require.Equal(t, "mine", string(b), "nothing was overwritten")
	entries, err := os.ReadDir(full)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing was written")
}

// TestNewQuotesPaths: the paths kubeplug new writes into files, the
// checkout's in go.mod and its own in the Makefile, cannot add a line of
// their own there: go.mod quotes the checkout's path, and the Makefile runs
// kubeplug from PATH when this binary's path is not plain. The directory's
// is only printed, escaped.
func TestNewQuotesPaths(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", "..", ".."))
	require.NoError(t, err)
	source := filepath.Join(t.TempDir(), "kubeplug\nrequire evil.example v1.0.0")
	require.NoError(t, os.Symlink(repo, source))
	// A directory's name is printed, not written into a file: escaped for
	// the terminal.
	dir := filepath.Join(t.TempDir(), "p\x1b]0;pwned\a")
	out, errOut, code := kubeplug(t, "", "new", "p", "--dir", dir, "--kubeplug-source", source)
	require.Equal(t, exitOK, code, errOut)
	require.NotContains(t, out, "\x1b")
	require.Contains(t, out, `p\x1b]0;pwned\x07`)
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	f, err := modfile.Parse("go.mod", data, nil)
	require.NoError(t, err)
	require.Equal(t, "example.com/p", f.Module.Mod.Path)
	require.Len(t, f.Replace, 1, "%s", data)
	require.Equal(t, source, f.Replace[0].New.Path)

	for _, tc := range []struct{ exe, bin string }{
		{"/usr/local/bin/kubeplug", "/usr/local/bin/kubeplug"},
		{"/opt/kubeplug-1.2+dev/bin/kubeplug", "/opt/kubeplug-1.2+dev/bin/kubeplug"},
		{"/tmp/$(shell touch pwned)/kubeplug", "kubeplug"},
		{"/tmp/a\nall:; touch pwned/kubeplug", "kubeplug"},
		{"/home/me/my tools/kubeplug", "kubeplug"},
		{"/tmp/x#y/kubeplug", "kubeplug"},
		{"/tmp/`touch pwned`/kubeplug", "kubeplug"},
	} {
		bin, note := makefileBinary(tc.exe)
		require.Equal(t, tc.bin, bin, tc.exe)
		require.Equal(t, bin == "kubeplug", note != "", tc.exe)
	}
}
