package oci_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/kubeplug/kubeplug/host/oci"
	"github.com/kubeplug/kubeplug/host/oci/ocitest"
)

// newKey writes a fresh P-256 key pair to dir and returns its files.
var newKey = ocitest.KeyPair

func TestSignatures(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ownKey, ownPub := newKey(t, dir, "own")
	otherKey, _ := newKey(t, dir, "other")
	reg := newRegistry(t, false)
	o := reg.options()

	push := func(repoTag string, fill byte) string {
		pinned, err := oci.Push(ctx, reg.ref(repoTag), wasmBytes(50, fill), oci.ModuleConfig{}, o)
		require.NoError(t, err)
		return pinned
	}
	signWith := func(ref, key string) {
		s, err := oci.LoadSigner(key)
		require.NoError(t, err)
		_, err = oci.Sign(ctx, ref, s, o)
		require.NoError(t, err)
	}
	signed := push("m/signed:v1", 1)
	signWith(signed, ownKey)
	unsigned := push("m/unsigned:v1", 2)
	wrong := push("m/wrong:v1", 3)
	signWith(wrong, otherKey)
	both := push("m/both:v1", 4)
	signWith(both, otherKey)
	signWith(both, ownKey)
	// A signature of the first version stays with it when the tag moves.
	moved := push("m/moved:v1", 5)
	signWith(moved, ownKey)
	push("m/moved:v1", 6)
	// A valid signature of one module copied onto another.
	replayed := push("m/replayed:v1", 7)
	replaySignature(t, reg, signed, replayed)

	v, err := oci.LoadVerifier(ownPub)
	require.NoError(t, err)
	verified := o
	verified.Verifier = v
	for _, tc := range []struct {
		name, ref string
		want      error
	}{
		{"signed", signed, nil},
		{"signed, by tag", reg.ref("m/signed:v1"), nil},
		{"unsigned", unsigned, oci.ErrUnsigned},
		{"wrongly signed", wrong, oci.ErrSignature},
		{"signed by another key and by the right one", both, nil},
		{"tag moved to an unsigned digest", reg.ref("m/moved:v1"), oci.ErrUnsigned},
		{"another module's signature", replayed, oci.ErrSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reg.blobGets.Load()
			a, err := oci.Pull(ctx, tc.ref, verified)
			if tc.want == nil {
				require.NoError(t, err)
				require.NotEmpty(t, a.Wasm)
				return
			}
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, ownPub)
			if tc.want == oci.ErrUnsigned {
				require.Equal(t, before, reg.blobGets.Load(), "an unsigned module is not downloaded")
			}
		})
	}
}

func TestKeys(t *testing.T) {
	dir := t.TempDir()
	priv, pub := newKey(t, dir, "k")
	garbage := filepath.Join(dir, "garbage")
	require.NoError(t, os.WriteFile(garbage, []byte("hello"), 0o644))
	encrypted := filepath.Join(dir, "cosign.key")
	require.NoError(t, os.WriteFile(encrypted, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: []byte{1}}), 0o600))

	_, err := oci.LoadSigner(pub)
	require.ErrorIs(t, err, oci.ErrKey)
	_, err = oci.LoadSigner(garbage)
	require.ErrorIs(t, err, oci.ErrKey)
	_, err = oci.LoadSigner(encrypted)
	require.ErrorIs(t, err, oci.ErrKey)
	require.ErrorContains(t, err, "cosign sign")
	_, err = oci.LoadVerifier(priv)
	require.ErrorIs(t, err, oci.ErrKey)
	_, err = oci.LoadVerifier(garbage)
	require.ErrorIs(t, err, oci.ErrKey)
	_, err = oci.LoadVerifier(filepath.Join(dir, "missing.pub"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// replaySignature attaches the Sigstore bundle of the signed manifest to
// the target manifest, as an attacker who can push to the repository could.
func replaySignature(t *testing.T, reg *testRegistry, signed, target string) {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(signed)
	require.NoError(t, err)
	repo.PlainHTTP = true
	desc, err := repo.Resolve(ctx, repo.Reference.Reference)
	require.NoError(t, err)
	var bundleLayer *ocispec.Descriptor
	require.NoError(t, repo.Referrers(ctx, desc, "", func(rs []ocispec.Descriptor) error {
		for _, r := range rs {
			m, err := content.FetchAll(ctx, repo, r)
			require.NoError(t, err)
			var man ocispec.Manifest
			require.NoError(t, json.Unmarshal(m, &man))
			if len(man.Layers) == 1 && man.Layers[0].MediaType == oci.MediaTypeSigstoreBundle {
				bundleLayer = &man.Layers[0]
			}
		}
		return nil
	}))
	require.NotNil(t, bundleLayer, "the signed module has a bundle")
	targetRepo, err := remote.NewRepository(target)
	require.NoError(t, err)
	targetRepo.PlainHTTP = true
	subject, err := targetRepo.Resolve(ctx, targetRepo.Reference.Reference)
	require.NoError(t, err)
	_, err = oras.PackManifest(ctx, targetRepo, oras.PackManifestVersion1_1, oci.MediaTypeSigstoreBundle,
		oras.PackManifestOptions{Layers: []ocispec.Descriptor{*bundleLayer}, Subject: &subject})
	require.NoError(t, err)
}

// TestSignedPinnedOffline: an image pinned by digest, pulled once with its
// signature checked, is pulled again with the registry gone: the manifest,
// the module and the signature bundle that verified come from the cache,
// and the bundle is verified again with the key configured now.
func TestSignedPinnedOffline(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	signKey, pub := newKey(t, dir, "own")
	_, otherPub := newKey(t, dir, "other")
	reg := newRegistry(t, false)
	o := reg.options()
	o.CacheDir = t.TempDir()
	wasm := wasmBytes(50, 4)
	pinned, err := oci.Push(ctx, reg.ref("m/offline:v1"), wasm, oci.ModuleConfig{}, o)
	require.NoError(t, err)
	s, err := oci.LoadSigner(signKey)
	require.NoError(t, err)
	_, err = oci.Sign(ctx, pinned, s, o)
	require.NoError(t, err)
	v, err := oci.LoadVerifier(pub)
	require.NoError(t, err)
	o.Verifier = v
	_, err = oci.Pull(ctx, pinned, o)
	require.NoError(t, err)

	before := reg.requests.Load()
	a, err := oci.Pull(ctx, pinned, o)
	require.NoError(t, err)
	require.Equal(t, wasm, a.Wasm)
	require.Equal(t, before, reg.requests.Load(), "a cached, signed, pinned image is pulled without a request")

	reg.srv.Close()
	a, err = oci.Pull(ctx, pinned, o)
	require.NoError(t, err, "the registry is down")
	require.Equal(t, wasm, a.Wasm)

	// Another key does not accept the cached bundle, and the registry
	// that could have another signature is down.
	other, err := oci.LoadVerifier(otherPub)
	require.NoError(t, err)
	o.Verifier = other
	_, err = oci.Pull(ctx, pinned, o)
	require.Error(t, err)
	require.NotErrorIs(t, err, oci.ErrCache)

	// A bundle planted in the cache for this digest, signed for another
	// manifest, does not verify either.
	o.Verifier = v
	bundles, err := filepath.Glob(filepath.Join(o.CacheDir, "blobs", "sha256", "*.sigstore.json"))
	require.NoError(t, err)
	require.Len(t, bundles, 1)
	reg2 := newRegistry(t, false)
	o2 := reg2.options()
	o2.CacheDir = t.TempDir()
	otherPinned, err := oci.Push(ctx, reg2.ref("m/other:v1"), wasmBytes(50, 5), oci.ModuleConfig{}, o2)
	require.NoError(t, err)
	_, err = oci.Sign(ctx, otherPinned, s, o2)
	require.NoError(t, err)
	o2.Verifier = v
	_, err = oci.Pull(ctx, otherPinned, o2)
	require.NoError(t, err)
	planted, err := filepath.Glob(filepath.Join(o2.CacheDir, "blobs", "sha256", "*.sigstore.json"))
	require.NoError(t, err)
	require.Len(t, planted, 1)
	b, err := os.ReadFile(planted[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bundles[0], b, 0o644))
	_, err = oci.Pull(ctx, pinned, o)
	require.Error(t, err, "a bundle of another manifest is not this one's signature")
}
