package oci_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/oci"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestPushPullDescribe(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain HTTP", true: "TLS"}[tls], func(t *testing.T) {
			ctx := context.Background()
			reg := newRegistry(t, tls)
			o := reg.options()
			wasm := wasmBytes(1000, 7)
			man := abi.Manifest{Name: "retention", Version: "1.2.0", ABIVersion: "1.0.0", Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile}}
			pinned, err := oci.Push(ctx, reg.ref("policies/retention:1.2.0"), wasm, oci.ModuleConfig{Manifest: man, ABIVersion: "1.0.0"}, o)
			require.NoError(t, err)
			require.Contains(t, pinned, reg.host+"/policies/retention@sha256:")

			for _, ref := range []string{reg.ref("policies/retention:1.2.0"), pinned, reg.ref("policies/retention:1.2.0") + "@" + pinned[len(reg.host+"/policies/retention@"):]} {
				a, err := oci.Pull(ctx, ref, o)
				require.NoError(t, err, ref)
				require.Equal(t, wasm, a.Wasm)
				require.Equal(t, sha(wasm), a.SHA256)
				require.Equal(t, pinned, a.Pinned)
				require.Equal(t, "kubeplug", a.Layout.Name)
			}

			d, err := oci.Describe(ctx, reg.ref("policies/retention:1.2.0"), o)
			require.NoError(t, err)
			require.Nil(t, d.Wasm)
			require.NotNil(t, d.Config)
			require.Equal(t, man, d.Config.Manifest)
			require.Equal(t, sha(wasm), d.Config.SHA256)
			require.Equal(t, int64(len(wasm)), d.Config.Size)
		})
	}
}

// pushByHand pushes wasm in a layout of another tool, with oras-go alone.
func pushByHand(t *testing.T, reg *testRegistry, repoTag, configType string, config []byte, layerType string, wasm []byte) {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(reg.ref(repoTag))
	require.NoError(t, err)
	repo.PlainHTTP = true
	layer := content.NewDescriptorFromBytes(layerType, wasm)
	_, err = oras.PushBytes(ctx, repo, layerType, wasm)
	require.NoError(t, err)
	cfg := content.NewDescriptorFromBytes(configType, config)
	_, err = oras.PushBytes(ctx, repo, configType, config)
	require.NoError(t, err)
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}, ConfigDescriptor: &cfg})
	require.NoError(t, err)
	require.NoError(t, repo.Tag(ctx, desc, repo.Reference.Reference))
}

func TestPullAcceptsOtherLayouts(t *testing.T) {
	reg := newRegistry(t, false)
	for _, tc := range []struct {
		name, configType, layerType string
		config                      string
	}{
		{"kubewarden", oci.MediaTypeKubewardenConfig, oci.MediaTypeKubewardenLayer, `{}`},
		{"cncf", oci.MediaTypeCNCFConfig, oci.MediaTypeWasm, `{"architecture":"wasm","os":"wasip1","layerDigests":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wasm := wasmBytes(300, byte(len(tc.name)))
			pushByHand(t, reg, "vendor/"+tc.name+":v1", tc.configType, []byte(tc.config), tc.layerType, wasm)
			a, err := oci.Pull(context.Background(), reg.ref("vendor/"+tc.name+":v1"), reg.options())
			require.NoError(t, err)
			require.Equal(t, wasm, a.Wasm)
			require.Equal(t, tc.name, a.Layout.Name)
			d, err := oci.Describe(context.Background(), reg.ref("vendor/"+tc.name+":v1"), reg.options())
			require.NoError(t, err)
			require.Nil(t, d.Config, "only kubeplug's layout carries a manifest")
		})
	}
}

func TestPullRefuses(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, false)
	wasm := wasmBytes(4096, 1)
	pushByHand(t, reg, "img/container:v1", "application/vnd.oci.image.config.v1+json", []byte(`{}`), "application/vnd.oci.image.layer.v1.tar+gzip", wasm)
	pushByHand(t, reg, "img/twolayers:v1", oci.MediaTypeCNCFConfig, []byte(`{}`), "application/octet-stream", wasm)
	_, err := oci.Push(ctx, reg.ref("m/big:v1"), wasm, oci.ModuleConfig{}, reg.options())
	require.NoError(t, err)

	t.Run("a container image", func(t *testing.T) {
		_, err := oci.Pull(ctx, reg.ref("img/container:v1"), reg.options())
		require.ErrorIs(t, err, oci.ErrLayout)
		require.ErrorContains(t, err, "application/vnd.oci.image.config.v1+json")
		require.ErrorContains(t, err, "kubeplug push")
	})
	t.Run("a layer of the wrong type", func(t *testing.T) {
		_, err := oci.Pull(ctx, reg.ref("img/twolayers:v1"), reg.options())
		require.ErrorIs(t, err, oci.ErrLayout)
	})
	t.Run("too large, before download", func(t *testing.T) {
		before := reg.blobGets.Load()
		o := reg.options()
		o.MaxSize = 4000
		_, err := oci.Pull(ctx, reg.ref("m/big:v1"), o)
		require.ErrorIs(t, err, oci.ErrTooLarge)
		require.ErrorContains(t, err, "4104 bytes and the limit is 4000")
		require.Equal(t, before, reg.blobGets.Load(), "no blob was downloaded")
	})
	t.Run("digest mismatch", func(t *testing.T) {
		reg.corrupt.Store(true)
		defer reg.corrupt.Store(false)
		_, err := oci.Pull(ctx, reg.ref("m/big:v1"), reg.options())
		require.ErrorIs(t, err, oci.ErrDigest)
	})
	t.Run("an image index", func(t *testing.T) {
		repo, err := remote.NewRepository(reg.ref("img/index:v1"))
		require.NoError(t, err)
		repo.PlainHTTP = true
		index := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`)
		desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageIndex, index)
		require.NoError(t, repo.PushReference(ctx, desc, bytes.NewReader(index), "v1"))
		_, err = oci.Pull(ctx, reg.ref("img/index:v1"), reg.options())
		require.ErrorIs(t, err, oci.ErrLayout)
		require.ErrorContains(t, err, "image index")
	})
	t.Run("no such tag", func(t *testing.T) {
		_, err := oci.Pull(ctx, reg.ref("m/big:v9"), reg.options())
		require.ErrorIs(t, err, oci.ErrNotFound)
	})
	t.Run("not a reference", func(t *testing.T) {
		_, err := oci.Pull(ctx, "Not A Ref", reg.options())
		require.ErrorContains(t, err, "is not an image reference")
		require.ErrorIs(t, err, oci.ErrReference)
	})
	t.Run("TLS to a plain HTTP registry", func(t *testing.T) {
		o := reg.options()
		o.PlainHTTP = false
		_, err := oci.Pull(ctx, reg.ref("m/big:v1"), o)
		require.ErrorContains(t, err, "plainHTTP: true")
	})
}

func TestCredentials(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, false)
	reg.user, reg.password = "alice", "s3cret"
	o := reg.options()
	o.DockerConfig, o.DockerConfigFrom = reg.dockerConfig("alice", "s3cret"), "test config"
	wasm := wasmBytes(10, 3)
	_, err := oci.Push(ctx, reg.ref("private/m:v1"), wasm, oci.ModuleConfig{}, o)
	require.NoError(t, err)

	a, err := oci.Pull(ctx, reg.ref("private/m:v1"), o)
	require.NoError(t, err)
	require.Equal(t, wasm, a.Wasm)

	_, err = oci.Pull(ctx, reg.ref("private/m:v1"), reg.options())
	require.ErrorIs(t, err, oci.ErrUnauthorized)
	require.ErrorContains(t, err, "dockerConfig:")

	bad := reg.options()
	bad.DockerConfig, bad.DockerConfigFrom = reg.dockerConfig("alice", "wrong"), "stale.json"
	_, err = oci.Pull(ctx, reg.ref("private/m:v1"), bad)
	require.ErrorIs(t, err, oci.ErrUnauthorized)
	require.ErrorContains(t, err, "stale.json")

	garbled := reg.options()
	garbled.DockerConfig, garbled.DockerConfigFrom = []byte("not json"), "garbled.json"
	_, err = oci.Pull(ctx, reg.ref("private/m:v1"), garbled)
	require.ErrorContains(t, err, "garbled.json")
}

func TestCache(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, false)
	o := reg.options()
	o.CacheDir = t.TempDir()
	wasm := wasmBytes(100, 9)
	pinned, err := oci.Push(ctx, reg.ref("c/m:v1"), wasm, oci.ModuleConfig{}, o)
	require.NoError(t, err)
	_, err = oci.Pull(ctx, pinned, o)
	require.NoError(t, err)

	t.Run("a digest is served from the cache", func(t *testing.T) {
		before := reg.blobGets.Load()
		a, err := oci.Pull(ctx, pinned, o)
		require.NoError(t, err)
		require.Equal(t, wasm, a.Wasm)
		require.Equal(t, before, reg.blobGets.Load())
	})
	t.Run("a damaged file is fetched again", func(t *testing.T) {
		path := filepath.Join(o.CacheDir, "blobs", "sha256", sha(wasm))
		require.NoError(t, os.WriteFile(path, wasmBytes(100, 8), 0o644))
		before := reg.blobGets.Load()
		a, err := oci.Pull(ctx, pinned, o)
		require.NoError(t, err)
		require.Equal(t, wasm, a.Wasm)
		require.Equal(t, before+1, reg.blobGets.Load())
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, wasm, got, "the cache holds the good copy again")
	})
	t.Run("with the registry gone", func(t *testing.T) {
		reg.srv.Close()
		a, err := oci.Pull(ctx, pinned, o)
		require.NoError(t, err)
		require.Equal(t, wasm, a.Wasm)
		_, err = oci.Pull(ctx, reg.ref("c/m:v1"), o)
		require.Error(t, err, "a tag needs the registry")
	})
}
