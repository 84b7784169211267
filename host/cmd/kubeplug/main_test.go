package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
)

// testDir holds the compiled test modules and the compilation cache shared
// by every test of the package.
var testDir string

// envAsKubeplug makes the test binary the kubeplug command itself, for the
// tests that need a kubeplug binary to run (KUBEPLUG_BIN of sdktest, the
// Makefile of a module kubeplug new made): they point at os.Args[0].
const envAsKubeplug = "KUBEPLUG_CMD_TEST_AS_KUBEPLUG"

func TestMain(m *testing.M) {
	if os.Getenv(envAsKubeplug) != "" {
		os.Exit(execute(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "kubeplug-cmd-test-")
	if err != nil {
		panic(err)
	}
	testDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// kubeplug runs the command line with args and returns what it printed and
// its exit code.
func kubeplug(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append([]string{"--cache-dir", filepath.Join(testDir, "cache")}, args...)
	code = execute(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}

var (
	examplesMu sync.Mutex
	examples   = map[string]string{}
)

// warnretain builds examples/warnretain to wasm once and returns its path.
func warnretain(t *testing.T) string { return example(t, "warnretain") }

// example builds examples/NAME to wasm once and returns its path.
func example(t *testing.T, name string) string {
	t.Helper()
	examplesMu.Lock()
	defer examplesMu.Unlock()
	if path, ok := examples[name]; ok {
		return path
	}
	path := filepath.Join(testDir, name+".wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", path, "./examples/"+name)
	cmd.Dir = filepath.Join("..", "..", "..")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build examples/%s: %s", name, out)
	examples[name] = path
	return path
}

// handmadeModule writes a minimal WebAssembly module whose only export is a
// function of type () -> () named export.
func handmadeModule(t *testing.T, export string) string {
	t.Helper()
	wasm := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	wasm = append(wasm, 1, 4, 1, 0x60, 0, 0) // type section: () -> ()
	wasm = append(wasm, 3, 2, 1, 0)          // function section: one function of type 0
	exp := append([]byte{1, byte(len(export))}, export...)
	exp = append(exp, 0, 0) // a function, index 0
	wasm = append(wasm, 7, byte(len(exp)))
	wasm = append(wasm, exp...)
	wasm = append(wasm, 10, 4, 1, 2, 0, 0x0b) // code section: an empty body
	path := filepath.Join(t.TempDir(), export+".wasm")
	require.NoError(t, os.WriteFile(path, wasm, 0o644))
	return path
}

func TestVersion(t *testing.T) {
	out, _, code := kubeplug(t, "", "version")
	require.Equal(t, exitOK, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4)
	require.Regexp(t, `^kubeplug \S+$`, lines[0])
	require.Regexp(t, `^commit \S+$`, lines[1])
	require.Equal(t, "ABI "+abi.Current.String(), lines[2])
	require.Regexp(t, `^Go go1\.`, lines[3])
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"unknown command", []string{"frobnicate"}, `kubeplug: unknown command "frobnicate": run 'kubeplug --help' for the commands`},
		{"misspelt command", []string{"tset"}, `kubeplug: unknown command "tset": did you mean "test"?`},
		{"inspect without a file", []string{"inspect"}, "kubeplug inspect: want one module file or image reference, got 0 arguments"},
		{"unknown flag", []string{"inspect", "--bogus", "m.wasm"}, "unknown flag: --bogus"},
		{"unknown output", []string{"inspect", "-o", "yaml", "m.wasm"}, `-o "yaml": want text or json`},
		{"test without a module", []string{"test", "testdata"}, "kubeplug test: --module is required without --config"},
		{"module name without config", []string{"test", "--module-name", "m", "testdata"}, "--module-name m chooses a module of --config"},
		{"test without cases", []string{"test", "--module", "m.wasm"}, "no case files: give at least one case file or directory"},
		{"bad log level", []string{"--log-level", "loud", "test", "--module", "m.wasm", "testdata/failing.yaml"}, `--log-level "loud"`},
		{"version with arguments", []string{"version", "extra"}, "want no arguments, got 1 arguments"},
		{"harness without a module", []string{"harness"}, "--module is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := kubeplug(t, "", tt.args...)
			require.Equal(t, exitInput, code, "stderr: %s", errOut)
			require.Contains(t, errOut, tt.msg)
			require.Empty(t, out)
		})
	}
}

func TestInspect(t *testing.T) {
	module := warnretain(t)

	out, errOut, code := kubeplug(t, "", "inspect", module)
	require.Equal(t, exitOK, code, errOut)
	for _, line := range []string{
		`Name:\s+warnretain`,
		`Version:\s+0\.1\.0`,
		`ABI version:\s+` + regexp.QuoteMeta(abi.Current.String()),
		`Subject:\s+statefulset`,
		`Hooks:\s+reconcile`,
		`Capabilities:\s+event on statefulsets`,
		`Description:\s+Warns about StatefulSets .*`,
		`Configuration:\s+\{`,
		`File:\s+` + regexp.QuoteMeta(module),
		`Size:\s+\d+ bytes \(\d+\.\d MiB\)`,
		`SHA-256:\s+[0-9a-f]{64}`,
		`Host memory:\s+at most \d+\.\d MiB with the default limits: 4 instances x \(128\.0 MiB memory \+ 1048576 table elements \+ 1\.0 MiB output \+ call stack\)`,
		`Exports \(6\):`,
		`  kubeplug_on_reconcile\s+\(i32, i32\) -> \(i64\)`,
		`  ` + abi.Current.ExportName() + `\s+\(\) -> \(\)`,
		`  kubeplug\.kubeplug_write_log\s+\(i32, i32, i32\) -> \(\)`,
	} {
		require.Regexp(t, "(?m)^"+line+"$", out)
	}
	t.Run("aligned", func(t *testing.T) {
		column := func(section, prefix string) map[int]bool {
			cols := map[int]bool{}
			for _, l := range strings.Split(section, "\n") {
				if strings.HasPrefix(l, prefix) {
					cols[strings.Index(l, "(")] = true
				}
			}
			return cols
		}
		header, _, _ := strings.Cut(out, "\n\n")
		values := map[int]bool{}
		for _, l := range strings.Split(header, "\n") {
			if i := strings.Index(l, ":"); i > 0 && !strings.HasPrefix(l, " ") {
				values[len(l[:i+1])+len(l[i+1:])-len(strings.TrimLeft(l[i+1:], " "))] = true
			}
		}
		require.Len(t, values, 1, "every value starts in the same column:\n%s", header)
		_, exports, _ := strings.Cut(out, "Exports")
		exports, _, _ = strings.Cut(exports, "Imports")
		require.Len(t, column(exports, "  "), 1, "export signatures are aligned:\n%s", exports)
	})

	t.Run("json", func(t *testing.T) {
		out, errOut, code := kubeplug(t, "", "inspect", "-o", "json", module)
		require.Equal(t, exitOK, code, errOut)
		var d description
		require.NoError(t, json.Unmarshal([]byte(out), &d))
		require.Equal(t, "warnretain", d.Manifest.Name)
		require.Equal(t, "statefulset", d.Manifest.Subject)
		require.Equal(t, abi.Current.String(), d.ABIVersion)
		require.Len(t, d.SHA256, 64)
		require.Contains(t, d.Exports, function{Name: "kubeplug_manifest", Params: []string{}, Results: []string{"i64"}})
		require.Contains(t, d.Imports, function{Module: "kubeplug", Name: "kubeplug_write_log", Params: []string{"i32", "i32", "i32"}, Results: []string{}})
	})
}

func TestInspectRefusesBadModules(t *testing.T) {
	tests := []struct {
		name   string
		module string
		code   int
		msgs   []string
	}{
		{"not wasm", "testdata/failing.yaml", exitFailure,
			[]string{"testdata/failing.yaml is not a usable kubeplug module", "not a WebAssembly module"}},
		{"no version marker", handmadeModule(t, "hello"), exitFailure,
			[]string{"is not a usable kubeplug module", "no ABI version marker"}},
		{"unsupported ABI", handmadeModule(t, "kubeplug_abi_version_2_0_0"), exitFailure,
			[]string{"was built for an unsupported kubeplug ABI", "built for kubeplug ABI 2.0.0; this host speaks " + abi.Current.String()}},
		{"missing file", "testdata/nope.wasm", exitInput,
			[]string{"kubeplug inspect: cannot read module: open testdata/nope.wasm: no such file or directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := kubeplug(t, "", "inspect", tt.module)
			require.Equal(t, tt.code, code, "stderr: %s", errOut)
			require.Empty(t, out)
			for _, m := range tt.msgs {
				require.Contains(t, errOut, m)
			}
		})
	}
}

func TestTestCommand(t *testing.T) {
	module := warnretain(t)

	t.Run("the example's cases pass", func(t *testing.T) {
		dir := filepath.Join("..", "..", "..", "examples", "warnretain", "testdata")
		out, errOut, code := kubeplug(t, "", "test", "--module", module, dir)
		require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		require.Greater(t, len(lines), 1)
		for _, l := range lines[:len(lines)-1] {
			require.True(t, strings.HasPrefix(l, "PASS "+filepath.Join(dir, "cases.yaml")+": "), l)
		}
		require.Regexp(t, `^\d+ passed, 0 failed$`, lines[len(lines)-1])
	})

	t.Run("a failing case", func(t *testing.T) {
		out, errOut, code := kubeplug(t, "", "test", "--module", module, "testdata/failing.yaml")
		require.Equal(t, exitFailure, code, errOut)
		require.Equal(t, `PASS testdata/failing.yaml: a set that keeps its claims is warned about
FAIL testdata/failing.yaml: expecting silence from a module that warns: noActions: the module returned actions: round 1 default/web: event StatefulSet default/web; round 2 default/web: event StatefulSet default/web
1 passed, 1 failed
`, out)
		require.Empty(t, errOut)
	})

	t.Run("verbose", func(t *testing.T) {
		out, _, code := kubeplug(t, "", "test", "-v", "--module", module, "testdata/failing.yaml")
		require.Equal(t, exitFailure, code)
		require.Regexp(t, `(?m)^PASS testdata/failing.yaml: a set that keeps its claims is warned about\n    round 1 default/web: event StatefulSet default/web: executed \(event Warning ClaimsRetainedForever: .*\)\n    round 2 default/web: event StatefulSet default/web: executed`, out)
	})

	inputErrors := []struct {
		name string
		args []string
		msg  string
	}{
		{"bad YAML", []string{"--module", module, "testdata/failing.yaml", "testdata/badyaml.yaml"},
			"kubeplug test: testdata/badyaml.yaml:3: invalid YAML: did not find expected ',' or '}'"},
		{"unknown kind", []string{"--module", module, "testdata/unknownkind.yaml"},
			`kubeplug test: testdata/unknownkind.yaml:7: unknown kind "Service": known kinds are PersistentVolume (v1), `},
		{"no case files", []string{"--module", module, t.TempDir()}, "no case files (*.yaml, *.yml) in this directory"},
		{"missing case file", []string{"--module", module, "testdata/nope.yaml"}, "testdata/nope.yaml: cannot read: no such file or directory"},
		{"missing module", []string{"--module", "testdata/nope.wasm", "testdata/failing.yaml"}, "cannot read module: open testdata/nope.wasm"},
		{"unloadable module", []string{"--module", "testdata/failing.yaml", "testdata/failing.yaml"},
			"testdata/failing.yaml is not a usable kubeplug module"},
	}
	for _, tt := range inputErrors {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := kubeplug(t, "", append([]string{"test"}, tt.args...)...)
			require.Equal(t, exitInput, code, "stderr: %s", errOut)
			require.Contains(t, errOut, tt.msg)
			require.Empty(t, out, "no case runs when the input is unusable")
		})
	}
}

func TestHarness(t *testing.T) {
	module := warnretain(t)
	out, errOut, code := kubeplug(t, "", "harness", "--module", module)
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, "warnretain", "the first frame is the module's manifest")
}

// TestWebhookConfigUsage checks the flags webhook-config refuses before it
// loads anything.
func TestWebhookConfigUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"no config", []string{"webhook-config", "--url", "https://x"}, "--config is required"},
		{"neither", []string{"webhook-config", "--config", "h.yaml"}, "give exactly one of --service"},
		{"both", []string{"webhook-config", "--config", "h.yaml", "--url", "https://x", "--service", "a/b"}, "give exactly one of --service"},
		{"bad service", []string{"webhook-config", "--config", "h.yaml", "--service", "nonamespace"}, "want NAMESPACE/NAME[:PORT]"},
		{"bad port", []string{"webhook-config", "--config", "h.yaml", "--service", "a/b:http"}, `port "http" is not a port number`},
		{"missing ca", []string{"webhook-config", "--config", "h.yaml", "--url", "https://x", "--ca-bundle", "/nonexistent/ca.crt"}, "--ca-bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := kubeplug(t, "", tt.args...)
			require.Equal(t, exitInput, code, errOut)
			require.Contains(t, errOut, tt.msg)
		})
	}
}
