package main

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/kubeplug/kubeplug/host/oci"
	"github.com/kubeplug/kubeplug/host/oci/ocitest"
)

// testRegistry serves go-containerregistry's in-memory registry on
// loopback over plain HTTP and returns its host:port.
func testRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// keyPair writes a P-256 key pair and returns the private and public key
// files.
func keyPair(t *testing.T) (private, public string) {
	return ocitest.KeyPair(t, t.TempDir(), "cosign")
}

// TestRegistryCommands: push, sign, inspect and pull a module through a
// real registry, and run its cases from an image: entry.
func TestRegistryCommands(t *testing.T) {
	module := warnretain(t)
	wasm, err := os.ReadFile(module)
	require.NoError(t, err)
	host := testRegistry(t)
	signKey, pubKey := keyPair(t)
	imageCache := []string{"--image-cache-dir", t.TempDir()}
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return kubeplug(t, "", append(imageCache, args...)...)
	}

	ref := host + "/policies/warnretain:1.0.0"
	out, errOut, code := run("push", "--plain-http", "--sign-key", signKey, module, ref)
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, "pushed "+host+"/policies/warnretain@sha256:")
	require.Contains(t, out, "signed "+host+"/policies/warnretain@sha256:")

	t.Run("inspect without running the module", func(t *testing.T) {
		out, errOut, code := run("inspect", "--plain-http", ref)
		require.Equal(t, exitOK, code, errOut)
		require.Regexp(t, `(?m)^Name: +warnretain$`, out)
		require.Contains(t, out, "the manifest as published")
		require.Contains(t, out, "allow:\n  - {action: event, resources: [statefulsets]}")
		require.NotContains(t, out, "Exports", "nothing was loaded")
		out, _, code = run("inspect", "--plain-http", "-o", "json", ref)
		require.Equal(t, exitOK, code)
		var d imageDescription
		require.NoError(t, json.Unmarshal([]byte(out), &d))
		require.Equal(t, "warnretain", d.Manifest.Name)
		require.Equal(t, "kubeplug", d.Layout)
		require.Equal(t, int64(len(wasm)), d.Size)
	})
	t.Run("pull, signature required", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "m.wasm")
		out, errOut, code := run("pull", "--plain-http", "--public-key", pubKey, ref, "-o", file)
		require.Equal(t, exitOK, code, errOut)
		require.Contains(t, out, "(kubeplug layout, ")
		got, err := os.ReadFile(file)
		require.NoError(t, err)
		require.Equal(t, wasm, got)
	})
	t.Run("an unwritable image cache fails the pull, naming the flag", func(t *testing.T) {
		dir := blocked(t)
		_, errOut, code := kubeplug(t, "", "--image-cache-dir", dir, "pull", "--plain-http", ref, "-o", filepath.Join(t.TempDir(), "m.wasm"))
		require.NotEqual(t, exitOK, code)
		require.Contains(t, errOut, "in the image cache "+dir)
		require.Contains(t, errOut, "give kubeplug's --image-cache-dir a writable directory")
	})
	t.Run("an unsigned module, then signed", func(t *testing.T) {
		unsigned := host + "/policies/unsigned:1.0.0"
		_, errOut, code := run("push", "--plain-http", module, unsigned)
		require.Equal(t, exitOK, code, errOut)
		file := filepath.Join(t.TempDir(), "m.wasm")
		_, errOut, code = run("pull", "--plain-http", "--public-key", pubKey, unsigned, "-o", file)
		require.Equal(t, exitFailure, code)
		require.Contains(t, errOut, "module not signed")
		require.NoFileExists(t, file)
		_, errOut, code = run("inspect", "--plain-http", "--public-key", pubKey, unsigned)
		require.Equal(t, exitFailure, code)
		require.Contains(t, errOut, "module not signed", "inspect --public-key checks the signature as pull does")
		_, errOut, code = run("sign", "--plain-http", "--key", signKey, unsigned)
		require.Equal(t, exitOK, code, errOut)
		out, errOut, code := run("inspect", "--plain-http", "--public-key", pubKey, unsigned)
		require.Equal(t, exitOK, code, errOut)
		require.Contains(t, out, "the manifest as published")
		_, errOut, code = run("pull", "--plain-http", "--public-key", pubKey, unsigned, "-o", file)
		require.Equal(t, exitOK, code, errOut)
	})
	t.Run("inspect a module of another layout", func(t *testing.T) {
		ctx := context.Background()
		repo, err := remote.NewRepository(host + "/vendor/cncf:v1")
		require.NoError(t, err)
		repo.PlainHTTP = true
		layer, err := oras.PushBytes(ctx, repo, oci.MediaTypeWasm, wasm)
		require.NoError(t, err)
		cfg, err := oras.PushBytes(ctx, repo, oci.MediaTypeCNCFConfig, []byte(`{"architecture":"wasm","os":"wasip1"}`))
		require.NoError(t, err)
		desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}, ConfigDescriptor: &cfg})
		require.NoError(t, err)
		require.NoError(t, repo.Tag(ctx, desc, "v1"))
		out, errOut, code := run("inspect", "--plain-http", host+"/vendor/cncf:v1")
		require.Equal(t, exitOK, code, errOut)
		require.Regexp(t, `(?m)^Name: +warnretain$`, out)
		require.Regexp(t, `(?m)^File: +`+regexp.QuoteMeta(host+"/vendor/cncf@"+desc.Digest.String())+`$`, out)
		require.Contains(t, out, "Exports")
	})
	t.Run("test --config with an image entry", func(t *testing.T) {
		signed := "modules:\n- image: " + ref + "\n  plainHTTP: true\n  signature: {publicKey: " + pubKey + "}\n" + warnretainAllow
		out, errOut, code := run("test", "--config", writeConfig(t, signed), "testdata/failing.yaml")
		require.Equal(t, exitFailure, code, errOut)
		require.Contains(t, out, "PASS testdata/failing.yaml: a set that keeps its claims is warned about\n")

		_, otherPub := keyPair(t)
		wrong := "modules:\n- image: " + ref + "\n  plainHTTP: true\n  signature: {publicKey: " + otherPub + "}\n" + warnretainAllow
		_, errOut, code = run("test", "--config", writeConfig(t, wrong), "testdata/failing.yaml")
		require.Equal(t, exitInput, code)
		require.Contains(t, errOut, "signature does not verify")
		require.Contains(t, errOut, "host.yaml:2 (modules[0])")
	})
	t.Run("bad input", func(t *testing.T) {
		_, errOut, code := run("pull", "--plain-http", ref)
		require.Equal(t, exitInput, code)
		require.Contains(t, errOut, "-o is required")
		_, errOut, code = run("push", "--plain-http", "--sign-key", pubKey, module, ref)
		require.Equal(t, exitInput, code)
		require.Contains(t, errOut, "--sign-key")
		_, errOut, code = run("pull", "--plain-http", host+"/policies/nope:1", "-o", filepath.Join(t.TempDir(), "x"))
		require.Equal(t, exitFailure, code)
		require.Contains(t, errOut, "not found in registry")
		_, errOut, code = run("sign", "--plain-http", "--key", signKey, "Not A Ref")
		require.Equal(t, exitInput, code, errOut)
		require.Contains(t, errOut, "is not an image reference")
	})
}

// TestStalledRegistry: a registry that accepts requests and never answers
// fails `kubeplug pull` and `kubeplug test --config` at --image-timeout,
// with an error that says so, instead of wedging them.
func TestStalledRegistry(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })
	ref := strings.TrimPrefix(srv.URL, "http://") + "/policies/stalled:1.0.0"
	flags := []string{"--image-cache-dir", t.TempDir(), "--image-timeout", "1s"}

	file := filepath.Join(t.TempDir(), "m.wasm")
	_, errOut, code := kubeplug(t, "", append(flags, "pull", "--plain-http", ref, "-o", file)...)
	require.Equal(t, exitFailure, code, errOut)
	require.Contains(t, errOut, "registry timed out")
	require.Contains(t, errOut, "within 1s")
	require.NoFileExists(t, file)

	entry := "modules:\n- image: " + ref + "\n  plainHTTP: true\n" + warnretainAllow
	_, errOut, code = kubeplug(t, "", append(flags, "test", "--config", writeConfig(t, entry), "testdata/failing.yaml")...)
	require.NotEqual(t, exitOK, code)
	require.Contains(t, errOut, "registry timed out")
}
