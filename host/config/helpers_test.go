package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/config"
)

// modules are the module files every test directory holds.
var modules = map[string]string{
	"guests/m.wasm":              "\x00asm m",
	"guests/n.wasm":              "\x00asm n",
	"guests/retention.wasm":      "\x00asm retention",
	"guests/reclaim.wasm":        "\x00asm reclaim",
	"guests/templateupdate.wasm": "\x00asm templateupdate",
}

// writeFiles creates files (slash-separated paths) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
}

// load writes yaml to host.yaml in a new directory that holds the module
// files, and loads it.
func load(t *testing.T, yaml string) (*config.File, string, error) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, modules)
	writeFiles(t, dir, map[string]string{"host.yaml": yaml})
	f, err := config.Load(filepath.Join(dir, "host.yaml"))
	return f, dir, err
}

// mustLoad is load for files that must be valid.
func mustLoad(t *testing.T, yaml string) *config.File {
	t.Helper()
	f, _, err := load(t, yaml)
	require.NoError(t, err)
	return f
}
