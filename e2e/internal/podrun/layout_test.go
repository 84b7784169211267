package podrun_test

import (
	"runtime"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/e2e/internal/podrun"
)

// TestReadLayout: a layout as make image writes it, an image index of two
// platforms named by its tag with a referrer listed beside it, gives the
// index's image for this machine under the index's name, and nothing for
// the referrer; a single image is read as it is.
func TestReadLayout(t *testing.T) {
	mine, err := random.Image(64, 1)
	require.NoError(t, err)
	other, err := random.Image(64, 1)
	require.NoError(t, err)
	otherArch := "arm64"
	if runtime.GOARCH == otherArch {
		otherArch = "amd64"
	}
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: otherArch}}},
		mutate.IndexAddendum{Add: mine, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}},
	)
	referrer, err := random.Image(16, 1)
	require.NoError(t, err)
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	require.NoError(t, err)
	require.NoError(t, p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"io.containerd.image.name": "kubeplug:v0.1.0"})))
	require.NoError(t, p.AppendImage(referrer))

	imgs, err := podrun.ReadLayout(dir)
	require.NoError(t, err)
	require.Len(t, imgs, 1)
	require.Equal(t, "kubeplug:v0.1.0", imgs[0].Name)
	got, err := imgs[0].Image.Digest()
	require.NoError(t, err)
	want, err := mine.Digest()
	require.NoError(t, err)
	require.Equal(t, want, got, "not this machine's image of the index")

	single := t.TempDir()
	p, err = layout.Write(single, empty.Index)
	require.NoError(t, err)
	require.NoError(t, p.AppendImage(mine, layout.WithAnnotations(map[string]string{"io.containerd.image.name": "kubeplug:dev"})))
	imgs, err = podrun.ReadLayout(single)
	require.NoError(t, err)
	require.Len(t, imgs, 1)
	require.Equal(t, "kubeplug:dev", imgs[0].Name)
}
