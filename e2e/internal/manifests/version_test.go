package manifests_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/e2e/internal/manifests"
)

// TestOneVersion holds the versions together: the chart's appVersion is its
// version with a v (both the release's tag), the image both installs run by
// default is tagged with it, and on a release's commit it is the tag, which
// is what make -s version prints and make image tags the image with.
func TestOneVersion(t *testing.T) {
	chrt, err := loader.Load(manifests.ChartDir())
	require.NoError(t, err)
	app := chrt.Metadata.AppVersion
	require.Equal(t, "v"+chrt.Metadata.Version, app, "Chart.yaml: appVersion must be version with a v, the release's tag")

	b, err := os.ReadFile(filepath.Join(manifests.Root(), "deploy", "base", "kustomization.yaml"))
	require.NoError(t, err)
	var k struct {
		Images []struct{ Name, NewName, NewTag string } `json:"images"`
	}
	require.NoError(t, yaml.Unmarshal(b, &k))
	require.Len(t, k.Images, 1)
	require.Equal(t, app, k.Images[0].NewTag, "deploy/base/kustomization.yaml's newTag and the chart's appVersion")

	_, hobjs, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kubeplug-system"})
	require.NoError(t, err)
	_, kobjs, err := manifests.Kustomize("deploy")
	require.NoError(t, err)
	for name, objs := range map[string][]*unstructured.Unstructured{"chart": hobjs, "base": kobjs} {
		d := deployment(t, objs, "kubeplug")
		require.Equal(t, "kubeplug:"+app, d.Spec.Template.Spec.Containers[0].Image, name)
	}

	// On a release's commit, its tag is the version.
	tag, err := exec.Command("git", "-C", manifests.Root(), "describe", "--exact-match", "--tags", "--match", "v[0-9]*", "HEAD").Output()
	if err == nil {
		require.Equal(t, strings.TrimSpace(string(tag)), app, "HEAD is tagged: Chart.yaml and the base must name that release")
	}
}
