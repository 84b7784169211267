package config_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/config"
)

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestRead checks that Read returns the module's bytes when its digest
// matches the pin, and refuses them, saying what to do, when it does not.
func TestRead(t *testing.T) {
	content := modules["guests/m.wasm"]
	other := strings.Repeat("0", 64)
	tests := []struct {
		name string
		pin  string // sha256: line, empty for none
		want []string
	}{
		{name: "unpinned"},
		{name: "matching pin", pin: digest(content)},
		{name: "matching pin in upper case", pin: strings.ToUpper(digest(content))},
		{name: "mismatching pin", pin: other, want: []string{
			`module "m": module digest mismatch: `,
			filepath.Join("guests", "m.wasm") + " has sha256 " + digest(content),
			"host.yaml:3 (modules[0].sha256) pins " + other,
			"set sha256: " + digest(content) + " there, otherwise put back the pinned file",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := "modules:\n- path: guests/m.wasm\n"
			if tt.pin != "" {
				yaml += "  sha256: " + tt.pin + "\n"
			}
			m := mustLoad(t, yaml).Modules[0]
			got, err := m.Read()
			if tt.want == nil {
				require.NoError(t, err)
				require.Equal(t, content, string(got))
				return
			}
			require.ErrorIs(t, err, config.ErrDigest)
			require.NotErrorIs(t, err, config.ErrInvalid)
			require.Nil(t, got)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestReadChangedFile checks that Read sees the file as it is now: a file
// replaced after Load fails its pin, and a removed one says which file.
func TestReadChangedFile(t *testing.T) {
	f, dir, err := load(t, "modules:\n- path: guests/m.wasm\n  sha256: "+digest(modules["guests/m.wasm"])+"\n")
	require.NoError(t, err)
	m := f.Modules[0]
	path := filepath.Join(dir, "guests", "m.wasm")

	require.NoError(t, os.WriteFile(path, []byte("\x00asm rebuilt"), 0o644))
	_, err = m.Read()
	require.ErrorIs(t, err, config.ErrDigest)

	require.NoError(t, os.Remove(path))
	_, err = m.Read()
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, path)
}

// TestReadHandBuiltModule checks that a Module made in code, with no
// configuration file behind it, still explains a mismatch.
func TestReadHandBuiltModule(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, modules)
	m := &config.Module{Name: "m", Path: filepath.Join(dir, "guests", "m.wasm"), SHA256: strings.Repeat("a", 64)}
	_, err := m.Read()
	require.ErrorIs(t, err, config.ErrDigest)
	require.ErrorContains(t, err, "the host configuration pins "+strings.Repeat("a", 64))
}

// TestSameAs: an entry moved in its file is the same entry; a changed field
// is not.
func TestSameAs(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"m.wasm": "m", "n.wasm": "n"})
	parse := func(yaml string) *config.File {
		f, err := config.Parse([]byte(yaml), filepath.Join(dir, "host.yaml"))
		require.NoError(t, err)
		return f
	}
	a := parse("modules:\n- path: m.wasm\n  sha256: " + strings.Repeat("a", 64) + "\n  mode: shadow\n")
	moved := parse("modules:\n- path: n.wasm\n  mode: shadow\n- path: m.wasm\n  sha256: " + strings.Repeat("a", 64) + "\n  mode: shadow\n")
	changed := parse("modules:\n- path: m.wasm\n  sha256: " + strings.Repeat("a", 64) + "\n  mode: shadow\n  workers: 3\n")
	require.True(t, a.Modules[0].SameAs(&moved.Modules[1]))
	require.False(t, a.Modules[0].SameAs(&changed.Modules[0]))
}
