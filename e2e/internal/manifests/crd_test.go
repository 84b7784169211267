package manifests_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/e2e/internal/manifests"
)

// TestChartHasNoSymlink: Helm warns "found symbolic link in path" for each
// one on every command, which the chart's CRD was.
func TestChartHasNoSymlink(t *testing.T) {
	require.NoError(t, filepath.WalkDir(manifests.ChartDir(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			t.Errorf("%s is a symbolic link: Helm warns of it on every command; make it a copy of the file", path)
		}
		return nil
	}))
}

// TestChartCRDsAreDeploys: each CRD of the chart's crds/ is a copy of the
// file of that name under deploy/, which kubectl apply -k installs, so the
// two installs serve one schema.
func TestChartCRDsAreDeploys(t *testing.T) {
	crds, err := filepath.Glob(filepath.Join(manifests.ChartDir(), "crds", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, crds)
	for _, crd := range crds {
		chart, err := os.ReadFile(crd)
		require.NoError(t, err)
		var copies []string
		require.NoError(t, filepath.WalkDir(filepath.Join(manifests.Root(), "deploy"), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == filepath.Base(crd) {
				copies = append(copies, path)
			}
			return err
		}))
		require.Len(t, copies, 1, "deploy/ must hold one %s", filepath.Base(crd))
		kustomize, err := os.ReadFile(copies[0])
		require.NoError(t, err)
		require.Equal(t, string(kustomize), string(chart), "%s differs from %s: copy it there (cp %s %s)", crd, copies[0], copies[0], crd)
	}
}
