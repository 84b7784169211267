package podrun_test

import (
	"runtime"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/e2e/internal/podrun"
)

// TestPlatformImage: from an image index the node takes the image of its
// own platform, and an index without one is refused by name.
func TestPlatformImage(t *testing.T) {
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	images := map[string]v1.Image{}
	index := func(archs ...string) v1.ImageIndex {
		idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		for _, a := range archs {
			img, err := random.Image(64, 1)
			require.NoError(t, err)
			images[a] = img
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
				Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: a}}})
		}
		return idx
	}
	p, err := layout.Write(t.TempDir(), empty.Index)
	require.NoError(t, err)
	both, only := index(other, runtime.GOARCH), index(other)
	require.NoError(t, p.AppendIndex(both))
	require.NoError(t, p.AppendIndex(only))
	top, err := p.ImageIndex()
	require.NoError(t, err)
	im, err := top.IndexManifest()
	require.NoError(t, err)

	img, err := podrun.PlatformImage(p, im.Manifests[0])
	require.NoError(t, err)
	got, err := img.Digest()
	require.NoError(t, err)
	want, err := images[runtime.GOARCH].Digest()
	require.NoError(t, err)
	require.Equal(t, want, got)

	_, err = podrun.PlatformImage(p, im.Manifests[1])
	require.ErrorContains(t, err, "has no image for linux/"+runtime.GOARCH+", this node's platform (it has linux/"+other+")")
}
