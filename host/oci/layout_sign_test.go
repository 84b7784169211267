package oci_test

import (
	"context"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"

	kpoci "github.com/kubeplug/kubeplug/host/oci"
)

// TestSignInLayout signs manifests in an OCI image layout, as make image
// signs the host's image, and verifies them there with the code that
// verifies a module in a registry; an SBOM attached beside a signature is
// not taken for one, and is the same manifest when attached again.
func TestSignInLayout(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ownKey, ownPub := newKey(t, dir, "own")
	otherKey, _ := newKey(t, dir, "other")
	store, err := oci.NewWithContext(ctx, t.TempDir())
	require.NoError(t, err)
	manifest := func(fill byte) ocispec.Descriptor {
		layer := wasmBytes(50, fill)
		desc, err := oras.PushBytes(ctx, store, "application/wasm", layer)
		require.NoError(t, err)
		m, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, "application/vnd.example",
			oras.PackManifestOptions{Layers: []ocispec.Descriptor{desc}})
		require.NoError(t, err)
		return m
	}
	signWith := func(subject ocispec.Descriptor, key string) {
		s, err := kpoci.LoadSigner(key)
		require.NoError(t, err)
		_, err = kpoci.SignManifest(ctx, store, subject, s)
		require.NoError(t, err)
	}
	created := time.Unix(1700000000, 0)
	attachSBOM := func(subject ocispec.Descriptor) ocispec.Descriptor {
		d, err := kpoci.Attach(ctx, store, subject, "application/vnd.cyclonedx+json", []byte(`{"bomFormat":"CycloneDX"}`), created)
		require.NoError(t, err)
		return d
	}

	signed, unsigned, wrong := manifest(1), manifest(2), manifest(3)
	signWith(signed, ownKey)
	sbom := attachSBOM(signed)
	require.Equal(t, sbom, attachSBOM(signed), "the same SBOM at the same time is the same manifest")
	attachSBOM(unsigned)
	signWith(wrong, otherKey)

	v, err := kpoci.LoadVerifier(ownPub)
	require.NoError(t, err)
	require.NoError(t, v.VerifyManifest(ctx, store, signed))
	require.ErrorIs(t, v.VerifyManifest(ctx, store, unsigned), kpoci.ErrUnsigned, "an SBOM is no signature")
	require.ErrorIs(t, v.VerifyManifest(ctx, store, wrong), kpoci.ErrSignature)
}
