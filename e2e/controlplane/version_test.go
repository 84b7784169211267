package controlplane_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/manifests"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestVersion: kube-apiserver reports the release it is built from, as
// kubectl version and Helm's kubeVersion check read it; without the stamp
// it said v0.0.0-master+$Format:%H$, which neither can parse.
func TestVersion(t *testing.T) {
	cp, c := start(t, controlplane.Options{Logf: t.Logf})
	v, err := c.Discovery().ServerVersion()
	require.NoError(t, err)
	require.Equal(t, controlplane.Version, v.GitVersion)
	require.Equal(t, "1", v.Major)
	require.Equal(t, "37", v.Minor)

	kubectl, err := testenv.Kubectl()
	require.NoError(t, err)
	cmd := exec.Command(kubectl, "version", "-o", "json", "--kubeconfig", cp.Kubeconfig)
	out, err := cmd.Output()
	require.NoError(t, err, "kubectl version: %s", out)
	var got struct {
		ServerVersion struct {
			GitVersion string `json:"gitVersion"`
			Major      string `json:"major"`
			Minor      string `json:"minor"`
		} `json:"serverVersion"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "kubectl version -o json printed %s", out)
	require.Equal(t, controlplane.Version, got.ServerVersion.GitVersion)
	require.Equal(t, "1", got.ServerVersion.Major)
	require.Equal(t, "37", got.ServerVersion.Minor)
}

// TestVersionIsTheModules: the version the control plane reports is the
// k8s.io/kubernetes it is built from, and the one charts are rendered for.
func TestVersionIsTheModules(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "e2e", "go.mod"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)\s*$`).FindSubmatch(b)
	require.NotNil(t, m, "e2e/go.mod requires no k8s.io/kubernetes")
	require.Equal(t, string(m[1]), controlplane.Version, "controlplane.Version is not e2e/go.mod's k8s.io/kubernetes")
	require.Equal(t, controlplane.Version, manifests.KubeVersion, "charts are rendered for another version than the control plane's")
}
