package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
)

// Push publishes wasm at ref (a tag) in kubeplug's layout: cfg, completed
// with the module's size and digest, as the config blob and the module as
// its one layer. It returns the pinned reference (repository@digest).
func Push(ctx context.Context, ref string, wasm []byte, cfg ModuleConfig, o Options) (string, error) {
	ctx, cancel := o.bounded(ctx)
	defer cancel()
	repo, parsed, err := o.repository(ref)
	if err != nil {
		return "", err
	}
	if parsed.Reference == "" {
		return "", fmt.Errorf("image %s: give a tag to push to, e.g. %s:1.0.0", ref, ref)
	}
	if _, err := parsed.Digest(); err == nil {
		return "", fmt.Errorf("image %s: push to a tag, not a digest: the digest is the registry's to compute", ref)
	}
	sum := sha256.Sum256(wasm)
	cfg.SHA256, cfg.Size = hex.EncodeToString(sum[:]), int64(len(wasm))
	cfg.Architecture, cfg.OS = "wasm", "wasip1"
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("encode module config: %w", err)
	}
	desc, err := pushManifest(ctx, repo, MediaTypeModuleConfig, cfgJSON, MediaTypeWasm, wasm, nil, time.Time{})
	if err != nil {
		return "", o.explain(ref, err)
	}
	if err := repo.Tag(ctx, desc, parsed.Reference); err != nil {
		return "", o.explain(ref, err)
	}
	return parsed.Registry + "/" + parsed.Repository + "@" + desc.Digest.String(), nil
}

// Attach stores data in store (a registry's repository, or an OCI image
// layout that oras-go's content/oci opens) as an artifact of type
// artifactType that refers to subject: an image manifest with the empty
// config and data as its one layer, whose subject field makes it one of
// subject's OCI referrers. It is how a signature is attached, and how
// make image attaches each platform's SBOM. The manifest's created
// annotation is created, or the time now when zero: a fixed time makes the
// same data the same manifest.
func Attach(ctx context.Context, store content.Storage, subject ocispec.Descriptor, artifactType string, data []byte, created time.Time) (ocispec.Descriptor, error) {
	return pushManifest(ctx, store, "", nil, artifactType, data, &subject, created)
}

// pushManifest pushes a config blob of type configType (the empty config
// when nil), one layer, and an image manifest that names them, with subject
// when set. The manifest's artifactType is configType, or the layer's type
// under the empty config. Its created annotation is created, unless zero.
func pushManifest(ctx context.Context, store content.Storage, configType string, config []byte, layerType string, layer []byte, subject *ocispec.Descriptor, created time.Time) (ocispec.Descriptor, error) {
	layerDesc := content.NewDescriptorFromBytes(layerType, layer)
	if err := pushBlob(ctx, store, layerDesc, layer); err != nil {
		return ocispec.Descriptor{}, err
	}
	opts := oras.PackManifestOptions{Layers: []ocispec.Descriptor{layerDesc}, Subject: subject}
	if !created.IsZero() {
		opts.ManifestAnnotations = map[string]string{ocispec.AnnotationCreated: created.UTC().Format(time.RFC3339)}
	}
	artifactType := layerType
	if config != nil {
		cfgDesc := content.NewDescriptorFromBytes(configType, config)
		if err := pushBlob(ctx, store, cfgDesc, config); err != nil {
			return ocispec.Descriptor{}, err
		}
		opts.ConfigDescriptor = &cfgDesc
		artifactType = configType
	}
	return oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, artifactType, opts)
}

// pushBlob pushes b unless the store has it already.
func pushBlob(ctx context.Context, store content.Storage, desc ocispec.Descriptor, b []byte) error {
	if ok, err := store.Exists(ctx, desc); err == nil && ok {
		return nil
	}
	return store.Push(ctx, desc, bytes.NewReader(b))
}
