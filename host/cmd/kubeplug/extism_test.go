package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/runtime/hostile"
)

// inspect recognises an Extism plugin, says so, and counts the memory of
// Extism's kernel in the host memory it may take.
func TestInspectExtismPlugin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plugin.wasm")
	require.NoError(t, os.WriteFile(path, hostile.ExtismAnswering([]byte(`{"status":0}`)), 0o644))

	out, errOut, code := kubeplug(t, "", "inspect", path)
	require.Equal(t, exitOK, code, errOut)
	for _, line := range []string{
		`Name:\s+hostile`,
		`Kind:\s+Extism plugin, hook messages in json`,
		`Host memory:\s+at most \d+\.\d MiB with the default limits: 4 instances x \(2 x 128\.0 MiB memory \(the plugin's and Extism's kernel's\) \+ 1048576 table elements \+ 1\.0 MiB output \+ call stack\)`,
		`  kubeplug_manifest\s+\(\) -> \(i32\)`,
		`  extism:host/env\.output_set\s+\(i64, i64\) -> \(\)`,
	} {
		require.Regexp(t, "(?m)^"+line+"$", out)
	}

	out, errOut, code = kubeplug(t, "", "inspect", "-o", "json", path)
	require.Equal(t, exitOK, code, errOut)
	var d description
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	require.Equal(t, "extism", d.Kind)
	require.Equal(t, "json", d.Encoding)
}

// An Extism plugin that is not a kubeplug module (one of go-sdk's own test
// plugins) is refused with what it lacks.
func TestInspectRefusesExtismPluginThatIsNotAModule(t *testing.T) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/extism/go-sdk").Output()
	require.NoError(t, err)
	path := filepath.Join(strings.TrimSpace(string(dir)), "wasm", "hello.wasm")
	out, errOut, code := kubeplug(t, "", "inspect", path)
	require.Equal(t, exitFailure, code, errOut)
	require.Empty(t, out)
	require.Contains(t, errOut, "is not a usable kubeplug module")
	require.Contains(t, errOut, "it is an Extism plugin but not a kubeplug module: it has no Extism function kubeplug_manifest() -> (i32)")
}
