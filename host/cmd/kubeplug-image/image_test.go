package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/require"
)

const (
	testVersion = "v0.0.0-test"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
	testEpoch   = 1700000000
)

// fixture writes a modules directory and a CA bundle and returns Options
// that build from them into out.
func fixture(t *testing.T, out string) Options {
	t.Helper()
	dir := t.TempDir()
	mods := filepath.Join(dir, "modules")
	require.NoError(t, os.Mkdir(mods, 0o755))
	// Not real modules: the image builder copies bytes, it does not load
	// them. Written in an order that is not the sorted one.
	for _, n := range []string{"zeta.wasm", "alpha.wasm", "notes.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(mods, n), []byte("\x00asm\x01\x00\x00\x00"+n), 0o600))
	}
	ca := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o600))
	wd, err := os.Getwd()
	require.NoError(t, err)
	return Options{
		Out: out, Modules: mods, CABundle: ca, Repository: "kubeplug", Arch: runtime.GOARCH,
		Version: testVersion, Commit: testCommit, Epoch: testEpoch,
		HostDir: filepath.Join(wd, "..", ".."),
	}
}

// TestBuildTwiceSameDigest builds the image twice, binary included, from
// the same sources into two directories at different times and with files
// written in another order, and requires one digest; then checks what is
// inside: what makes it reproducible and what the manifests rely on.
func TestBuildTwiceSameDigest(t *testing.T) {
	ctx := context.Background()
	first := fixture(t, t.TempDir())
	r1, err := Build(ctx, first)
	require.NoError(t, err)
	second := fixture(t, t.TempDir())
	// Touch the inputs: their times must not reach the image.
	require.NoError(t, os.Chtimes(filepath.Join(second.Modules, "alpha.wasm"), epoch0, epoch0))
	r2, err := Build(ctx, second)
	require.NoError(t, err)
	require.Equal(t, r1.Digest, r2.Digest, "two builds of the same sources gave different images")

	// The OCI layout and the docker tarball hold the same image.
	p, err := layout.FromPath(r1.Layout)
	require.NoError(t, err)
	idx, err := p.ImageIndex()
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	require.Equal(t, r1.Digest, im.Manifests[0].Digest)
	require.Equal(t, testVersion, im.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	img, err := p.Image(r1.Digest)
	require.NoError(t, err)
	fromTar, err := tarball.ImageFromPath(r1.Tarball, nil)
	require.NoError(t, err)
	m1, err := img.ConfigName()
	require.NoError(t, err)
	m2, err := fromTar.ConfigName()
	require.NoError(t, err)
	require.Equal(t, m1, m2, "the tarball holds another image than the layout")

	cf, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, []string{"/kubeplug"}, cf.Config.Entrypoint)
	require.Equal(t, "65532:65532", cf.Config.User)
	require.Equal(t, int64(testEpoch), cf.Created.Unix())
	require.Equal(t, testCommit, cf.Config.Labels["org.opencontainers.image.revision"])
	require.Equal(t, "linux", cf.OS)

	// Every entry: sorted within its layer, mtime zero, owned by root
	// unless it is the user's home or cache.
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 3)
	var names []string
	for _, l := range layers {
		rc, err := l.Uncompressed()
		require.NoError(t, err)
		tr := tar.NewReader(rc)
		prev := ""
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			require.Less(t, prev, h.Name, "entries out of order")
			prev = h.Name
			require.Zero(t, h.ModTime.Unix(), h.Name)
			wantOwner := 0
			if h.Name == "home/nonroot/" || h.Name == "var/cache/kubeplug/" {
				wantOwner = UID
			}
			require.Equal(t, wantOwner, h.Uid, h.Name)
			require.Equal(t, wantOwner, h.Gid, h.Name)
			names = append(names, h.Name)
		}
		rc.Close()
	}
	require.Contains(t, names, "modules/alpha.wasm")
	require.Contains(t, names, "modules/zeta.wasm")
	require.NotContains(t, names, "modules/notes.txt")
	require.Contains(t, names, "etc/ssl/certs/ca-certificates.crt")

	// The binary is static and says its version and commit.
	root := t.TempDir()
	extract(t, img, root)
	passwd, err := os.ReadFile(filepath.Join(root, "etc", "passwd"))
	require.NoError(t, err)
	require.Contains(t, string(passwd), "nonroot:x:65532:65532:")
	out, err := exec.Command(filepath.Join(root, "kubeplug"), "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "kubeplug "+testVersion+"\n")
	require.Contains(t, string(out), "commit "+testCommit+"\n")
	file, err := exec.Command("go", "version", "-m", filepath.Join(root, "kubeplug")).CombinedOutput()
	require.NoError(t, err, "%s", file)
	require.Contains(t, string(file), "CGO_ENABLED=0")
	require.Contains(t, string(file), "-trimpath=true")
}

// extract writes the image's flattened files under root (regular files
// and directories only, which is all this image has).
func extract(t *testing.T, img v1.Image, root string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
		path := filepath.Join(root, filepath.FromSlash(h.Name))
		require.True(t, strings.HasPrefix(path, root+string(filepath.Separator)), h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(path, 0o755))
		case tar.TypeReg:
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm())
			require.NoError(t, err)
			_, err = io.Copy(f, tr)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		default:
			t.Fatalf("%s: unexpected entry type %c", h.Name, h.Typeflag)
		}
	}
}

// TestBuildRefusesBadInputs: every input is checked, and refused with the
// file and what to do, before anything is compiled.
func TestBuildRefusesBadInputs(t *testing.T) {
	tests := []struct {
		name   string
		modify func(t *testing.T, o *Options)
		want   string
	}{
		{"module name", func(t *testing.T, o *Options) {
			require.NoError(t, os.WriteFile(filepath.Join(o.Modules, "Bad Name.wasm"), nil, 0o600))
		}, "a module's file name must match"},
		{"module too large", func(t *testing.T, o *Options) {
			f, err := os.Create(filepath.Join(o.Modules, "huge.wasm"))
			require.NoError(t, err)
			require.NoError(t, f.Truncate(maxModuleSize+1))
			require.NoError(t, f.Close())
		}, "more than the 67108864 allowed"},
		{"too many modules", func(t *testing.T, o *Options) {
			for i := range maxModules {
				require.NoError(t, os.WriteFile(filepath.Join(o.Modules, fmt.Sprintf("m%d.wasm", i)), nil, 0o600))
			}
		}, "more than 64 modules"},
		{"module not a regular file", func(t *testing.T, o *Options) {
			require.NoError(t, os.Symlink("/dev/zero", filepath.Join(o.Modules, "zero.wasm")))
		}, "is not a regular file"},
		{"no modules", func(t *testing.T, o *Options) { o.Modules = t.TempDir() }, "holds no .wasm file (run make guests first)"},
		{"CA bundle without a certificate", func(t *testing.T, o *Options) {
			require.NoError(t, os.WriteFile(o.CABundle, []byte("not PEM"), 0o600))
		}, "holds no PEM certificate"},
		{"version not a tag", func(t *testing.T, o *Options) { o.Version = "1.0+build" }, "to be an image tag"},
		{"commit not hex", func(t *testing.T, o *Options) { o.Commit = "HEAD" }, "must be a git object name"},
		{"arch", func(t *testing.T, o *Options) { o.Arch = "wasm" }, `arch "wasm"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			o := fixture(t, out)
			tt.modify(t, &o)
			_, err := Build(context.Background(), o)
			require.ErrorContains(t, err, tt.want)
			entries, err := os.ReadDir(out)
			require.NoError(t, err)
			require.Empty(t, entries, "nothing is written for a refused build")
		})
	}
}
