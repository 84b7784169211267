package podrun

import (
	"fmt"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// PlatformImage is the image a node of this machine runs for descriptor d
// of layout p: the image d is, or, when d is an image index, the index's
// image for linux on this machine's architecture, as containerd picks one.
func PlatformImage(p layout.Path, d v1.Descriptor) (v1.Image, error) {
	if d.MediaType.IsImage() {
		return p.Image(d.Digest)
	}
	if !d.MediaType.IsIndex() {
		return nil, fmt.Errorf("%s is a %s: no image", d.Digest, d.MediaType)
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
	want := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	var has []string
	for _, m := range im.Manifests {
		if m.MediaType.IsImage() && m.Platform != nil && m.Platform.Satisfies(want) {
			return idx.Image(m.Digest)
		}
		if m.Platform != nil {
			has = append(has, m.Platform.String())
		}
	}
	return nil, fmt.Errorf("image index %s has no image for %s, this node's platform (it has %s): build one with make image",
		d.Digest, want.String(), strings.Join(has, ", "))
}
