package podrun

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// imageNameAnnotation is the full reference an OCI layout gives an
// image, as containerd imports it (`ctr image import`, `kind load`).
const imageNameAnnotation = "io.containerd.image.name"

// Image is an image of an OCI layout with the name it carries.
type Image struct {
	Name  string
	Image v1.Image
}

// ReadLayout reads the named images of the OCI layout in dir (what `make
// image` writes to build/image/oci), each with its name, the one for this
// machine where a name is an image index. Manifests without a name (the
// referrers a layout lists beside its images: SBOMs, signatures) are not
// images to run.
func ReadLayout(dir string) ([]Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w (make image writes build/image/oci)", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	var out []Image
	for _, d := range im.Manifests {
		ref := d.Annotations[imageNameAnnotation]
		if ref == "" {
			continue
		}
		img, err := PlatformImage(p, d)
		if err != nil {
			return nil, fmt.Errorf("OCI layout %s: %s: %w", dir, ref, err)
		}
		out = append(out, Image{Name: ref, Image: img})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("OCI layout %s names no image (annotation %s): build it with make image", dir, imageNameAnnotation)
	}
	return out, nil
}

// normalize is ref as containerd stores it (kubeplug:latest is
// index.docker.io/library/kubeplug:latest), or ref itself when it does
// not parse.
func normalize(ref string) string {
	r, err := name.ParseReference(ref)
	if err != nil {
		return ref
	}
	return r.Name()
}
