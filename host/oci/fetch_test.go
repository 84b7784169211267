package oci_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/oci"
)

// hostConfig writes host.yaml (with files beside it) and loads it.
func hostConfig(t *testing.T, yaml string, files map[string][]byte) *config.File {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "host.yaml"), []byte(yaml), 0o600))
	f, err := config.Load(filepath.Join(dir, "host.yaml"))
	require.NoError(t, err)
	return f
}

func TestFetch(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, false)
	reg.user, reg.password = "bob", "hunter2"
	keys := t.TempDir()
	signKey, pub := newKey(t, keys, "k")
	pubPEM, err := os.ReadFile(pub)
	require.NoError(t, err)
	o := reg.options()
	o.DockerConfig = reg.dockerConfig("bob", "hunter2")
	wasm := wasmBytes(64, 5)
	pinned, err := oci.Push(ctx, reg.ref("p/retention:1.0"), wasm, oci.ModuleConfig{}, o)
	require.NoError(t, err)
	signer, err := oci.LoadSigner(signKey)
	require.NoError(t, err)
	_, err = oci.Sign(ctx, pinned, signer, o)
	require.NoError(t, err)
	_, err = oci.Push(ctx, reg.ref("p/unsigned:1.0"), wasm, oci.ModuleConfig{}, o)
	require.NoError(t, err)

	files := map[string][]byte{"auth.json": reg.dockerConfig("bob", "hunter2"), "cosign.pub": pubPEM, "m.wasm": wasm}
	f := hostConfig(t, fmt.Sprintf(`requireSignature: {publicKey: cosign.pub}
modules:
- image: %s
  plainHTTP: true
  dockerConfig: auth.json
  sha256: %s
- image: %s
  plainHTTP: true
  dockerConfig: auth.json
- image: %s
  name: nocreds
  plainHTTP: true
`, reg.ref("p/retention:1.0"), sha(wasm), reg.ref("p/unsigned:1.0"), reg.ref("p/retention:1.0")), files)

	src, err := oci.Fetch(ctx, &f.Modules[0], oci.FetchOptions{CacheDir: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, wasm, src.Wasm)
	require.Equal(t, sha(wasm), src.SHA256)
	require.Equal(t, pinned, src.Name)
	require.Equal(t, pinned, reg.host+"/p/retention@"+src.Digest.String())

	_, err = oci.Fetch(ctx, &f.Modules[1], oci.FetchOptions{})
	require.ErrorIs(t, err, oci.ErrUnsigned)
	require.ErrorContains(t, err, "host.yaml:7 (modules[1])")

	_, err = oci.Fetch(ctx, &f.Modules[2], oci.FetchOptions{})
	require.ErrorIs(t, err, oci.ErrUnauthorized)
	require.ErrorContains(t, err, "dockerConfig:")

	pinnedWrong := hostConfig(t, fmt.Sprintf("modules:\n- image: %s\n  plainHTTP: true\n  dockerConfig: auth.json\n  sha256: %s\n",
		reg.ref("p/retention:1.0"), strings.Repeat("0", 64)), files)
	_, err = oci.Fetch(ctx, &pinnedWrong.Modules[0], oci.FetchOptions{})
	require.ErrorIs(t, err, config.ErrDigest)

	file := hostConfig(t, "modules:\n- path: m.wasm\n", files)
	src, err = oci.Fetch(ctx, &file.Modules[0], oci.FetchOptions{})
	require.NoError(t, err)
	require.Equal(t, wasm, src.Wasm)
	require.Equal(t, file.Modules[0].Path, src.Name)
	require.Empty(t, src.Digest)
}

func TestWatcher(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := newRegistry(t, false)
	o := reg.options()
	tag := reg.ref("w/retention:stable")
	first, err := oci.Push(ctx, tag, wasmBytes(10, 1), oci.ModuleConfig{}, o)
	require.NoError(t, err)
	f := hostConfig(t, fmt.Sprintf("modules:\n- image: %s\n  plainHTTP: true\n  resolveEvery: 10ms\n", tag), nil)

	// Each call records the digest the tag names when it is made: a
	// watcher that reported one digest twice would record it twice.
	calls := make(chan digest.Digest, 16)
	w := oci.NewWatcher(ctx, oci.FetchOptions{}, func(name string) {
		d, err := oci.Resolve(ctx, tag, o)
		if name != "retention" || err != nil {
			d = digest.Digest(fmt.Sprintf("unexpected call for %s: %v", name, err))
		}
		calls <- d
	}, nil)
	firstDigest := digest.Digest(first[strings.Index(first, "@")+1:])
	w.Watch(f.Modules[0], firstDigest)

	next := func() digest.Digest {
		t.Helper()
		select {
		case d := <-calls:
			return d
		case <-time.After(time.Minute): // a guard against hanging, not a measurement
			t.Fatal("the watcher did not report the moved tag")
			return ""
		}
	}
	second, err := oci.Push(ctx, tag, wasmBytes(10, 2), oci.ModuleConfig{}, o)
	require.NoError(t, err)
	require.Equal(t, second[strings.Index(second, "@")+1:], next().String())
	third, err := oci.Push(ctx, tag, wasmBytes(10, 3), oci.ModuleConfig{}, o)
	require.NoError(t, err)
	require.Equal(t, third[strings.Index(third, "@")+1:], next().String(), "one call per new digest")

	// A digest-pinned image, or a file, is not watched.
	w.Watch(config.Module{Name: "pinned", Image: first, ResolveEvery: 10 * time.Millisecond}, firstDigest)
	w.Stop("retention")
	w.Stop("pinned")
}
