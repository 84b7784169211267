package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/config"
)

// TestExample checks that testdata/host.yaml, which README.md shows, is
// valid, and that README.md shows it as it is.
func TestExample(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("testdata", "host.yaml"))
	require.NoError(t, err)
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	require.Contains(t, string(readme), "```yaml\n"+string(example)+"```\n", "README.md must show testdata/host.yaml verbatim")

	f, _, err := load(t, string(example))
	require.NoError(t, err)
	require.Len(t, f.Modules, 2)
	require.Equal(t, []string{"retention", "reclaim"}, []string{f.Modules[0].Name, f.Modules[1].Name})
	require.Equal(t, config.ModeShadow, f.Modules[1].Mode)
	require.Len(t, f.CSIDrivers, 1)
	require.True(t, strings.HasPrefix(f.CSIDrivers[0].Endpoint, "/"))
}

// TestReadmeExamples checks that every host configuration README.md shows is
// valid.
func TestReadmeExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	blocks := strings.Split(string(readme), "```yaml\n")[1:]
	require.NotEmpty(t, blocks)
	for i, b := range blocks {
		yaml, _, ok := strings.Cut(b, "```")
		require.True(t, ok, "block %d is not closed", i)
		_, _, err := load(t, yaml)
		require.NoError(t, err, "block %d:\n%s", i, yaml)
	}
}
