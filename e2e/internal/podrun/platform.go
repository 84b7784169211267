package podrun

import (
	"fmt"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// PlatformImage returns the image a node of this machine runs for the
// manifest d of the OCI layout p: d itself when it is an image, or, when
// it is an image index (make image writes one of linux/amd64 and
// linux/arm64), the index's image for linux and this machine's GOARCH, as
// containerd picks one from an index.
func PlatformImage(p layout.Path, d v1.Descriptor) (v1.Image, error) {
	switch {
	case d.MediaType.IsImage():
		return p.Image(d.Digest)
	case d.MediaType.IsIndex():
	default:
		return nil, fmt.Errorf("manifest %s is a %s, neither an image nor an image index", d.Digest, d.MediaType)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		return nil, fmt.Errorf("image index %s: %w", d.Digest, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image index %s: %w", d.Digest, err)
	}
	var has []string
	for _, m := range im.Manifests {
		if m.Platform == nil {
			continue
		}
		if m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH && m.MediaType.IsImage() {
			return idx.Image(m.Digest)
		}
		has = append(has, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	return nil, fmt.Errorf("image index %s has no image for linux/%s, this node's platform (it has %s): build one with make image",
		d.Digest, runtime.GOARCH, strings.Join(has, ", "))
}
