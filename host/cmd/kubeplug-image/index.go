package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/kubeplug/kubeplug/host/oci"
)

// imageLabels are the image's OCI annotations, on its config, its
// manifest and the index alike.
func imageLabels(o Options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "kubeplug",
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Commit,
		"org.opencontainers.image.created":  time.Unix(o.Epoch, 0).UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
}

// imageIndex is the OCI image index of the platforms' images, in the
// order of their architectures, so that it depends on nothing but them.
func imageIndex(o Options, images []built) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range images {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        b.image,
			Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "linux", Architecture: b.arch}},
		})
	}
	idx, ok := mutate.Annotations(idx, imageLabels(o)).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("annotate the image index")
	}
	return idx, nil
}

// writeLayout writes the OCI image layout at dir: the index, tagged with
// the version, then as its referrers each platform image's SBOM and, with
// a signer, the signatures of the index, of each image and of each SBOM,
// in the format the modules' are (oci.SignManifest). index.json lists the
// index first and the referrers after it by digest: oras and cosign find
// a layout's referrers among the manifests it lists.
func writeLayout(ctx context.Context, dir string, o Options, tag name.Tag, idx v1.ImageIndex, images []built, signer *oci.Signer) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write OCI layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		ocispec.AnnotationRefName:  o.Version,
		"io.containerd.image.name": tag.String(),
	})); err != nil {
		return fmt.Errorf("write OCI layout %s: %w", dir, err)
	}
	store, err := orasoci.NewWithContext(ctx, dir)
	if err != nil {
		return fmt.Errorf("open OCI layout %s: %w", dir, err)
	}
	store.AutoSaveIndex = false
	indexDesc, err := descriptorOf(idx, ocispec.MediaTypeImageIndex)
	if err != nil {
		return err
	}
	signed := []ocispec.Descriptor{indexDesc}
	var referrers []ocispec.Descriptor
	for _, b := range images {
		imageDesc, err := descriptorOf(b.image, ocispec.MediaTypeImageManifest)
		if err != nil {
			return err
		}
		sbom, err := oci.Attach(ctx, store, imageDesc, MediaTypeCycloneDX, b.sbom, time.Unix(o.Epoch, 0))
		if err != nil {
			return fmt.Errorf("attach linux/%s's SBOM: %w", b.arch, err)
		}
		referrers = append(referrers, sbom)
		signed = append(signed, imageDesc, sbom)
	}
	if signer != nil {
		for _, d := range signed {
			sig, err := oci.SignManifest(ctx, store, d, signer)
			if err != nil {
				return err
			}
			referrers = append(referrers, sig)
		}
	}
	return writeIndexJSON(dir, referrers)
}

// descriptorOf describes a manifest ggcr made, as oras-go takes it.
func descriptorOf(m interface {
	Digest() (v1.Hash, error)
	Size() (int64, error)
}, mediaType string) (ocispec.Descriptor, error) {
	d, err := m.Digest()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	size, err := m.Size()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.Digest(d.String()), Size: size}, nil
}

// writeIndexJSON adds referrers, sorted by digest, after what index.json
// lists.
func writeIndexJSON(dir string, referrers []ocispec.Descriptor) error {
	path := filepath.Join(dir, "index.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var index ocispec.Index
	if err := json.Unmarshal(b, &index); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	sort.Slice(referrers, func(i, j int) bool { return referrers[i].Digest < referrers[j].Digest })
	index.Manifests = append(index.Manifests, referrers...)
	if b, err = json.Marshal(index); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
