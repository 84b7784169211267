package main

import (
	"archive/tar"
	"context"
	"debug/elf"
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
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/oci/ocitest"
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
		Out: out, Modules: mods, CABundle: ca, Repository: "kubeplug",
		Archs: []string{"arm64", "amd64"}, TarballArch: runtime.GOARCH,
		Version: testVersion, Commit: testCommit, Epoch: testEpoch,
		HostDir: filepath.Join(wd, "..", ".."),
	}
}

// TestBuildTwiceSameDigest builds the image index twice, binaries
// included, from the same sources into two directories at different times
// and with files written in another order, the second time signed, and
// requires one digest for the index and for each platform, and the same
// SBOMs; then checks what is inside: what makes it reproducible and what
// the manifests and the install test rely on.
func TestBuildTwiceSameDigest(t *testing.T) {
	ctx := context.Background()
	first := fixture(t, t.TempDir())
	r1, err := Build(ctx, first)
	require.NoError(t, err)
	second := fixture(t, t.TempDir())
	// Touch the inputs: their times must not reach the image.
	require.NoError(t, os.Chtimes(filepath.Join(second.Modules, "alpha.wasm"), epoch0, epoch0))
	// Signing adds referrers; it changes no image.
	key, pub := ocitest.KeyPair(t, t.TempDir(), "kubeplug")
	second.SignKey = key
	r2, err := Build(ctx, second)
	require.NoError(t, err)
	require.Equal(t, r1.Digest, r2.Digest, "two builds of the same sources gave different image indexes")
	require.Len(t, r1.Platforms, 2)
	for i, p := range r1.Platforms {
		require.Equal(t, p.Digest, r2.Platforms[i].Digest, "linux/%s", p.Arch)
		s1, err := os.ReadFile(p.SBOM)
		require.NoError(t, err)
		s2, err := os.ReadFile(r2.Platforms[i].SBOM)
		require.NoError(t, err)
		require.Equal(t, string(s1), string(s2), "linux/%s's SBOM", p.Arch)
	}
	b, err := os.ReadFile(filepath.Join(first.Out, "digest"))
	require.NoError(t, err)
	require.Equal(t, r1.Digest.String()+"\n", string(b))

	// The layout's index.json names the image index by the version; the
	// index has one image per platform, each of its architecture.
	p, err := layout.FromPath(r1.Layout)
	require.NoError(t, err)
	top, err := p.ImageIndex()
	require.NoError(t, err)
	im, err := top.IndexManifest()
	require.NoError(t, err)
	require.Equal(t, r1.Digest, im.Manifests[0].Digest)
	require.Equal(t, types.OCIImageIndex, im.Manifests[0].MediaType)
	require.Equal(t, testVersion, im.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	idx, err := top.ImageIndex(r1.Digest)
	require.NoError(t, err)
	platforms, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Equal(t, testVersion, platforms.Annotations["org.opencontainers.image.version"])
	var archsSeen []string
	for _, d := range platforms.Manifests {
		archsSeen = append(archsSeen, d.Platform.Architecture)
		require.Equal(t, "linux", d.Platform.OS)
		img, err := idx.Image(d.Digest)
		require.NoError(t, err)
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		require.Equal(t, d.Platform.Architecture, cf.Architecture)
		root := t.TempDir()
		extract(t, img, root)
		f, err := elf.Open(filepath.Join(root, "kubeplug"))
		require.NoError(t, err)
		require.Equal(t, map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[d.Platform.Architecture], f.Machine,
			"linux/%s's binary", d.Platform.Architecture)
		require.NoError(t, f.Close())
	}
	require.Equal(t, []string{"amd64", "arm64"}, archsSeen)

	// This machine's image: in the tarball too, and what it holds.
	var local v1.Hash
	for _, p := range r1.Platforms {
		if p.Arch == runtime.GOARCH {
			local = p.Digest
		}
	}
	img, err := idx.Image(local)
	require.NoError(t, err)
	fromTar, err := tarball.ImageFromPath(r1.Tarball, nil)
	require.NoError(t, err)
	m1, err := img.ConfigName()
	require.NoError(t, err)
	m2, err := fromTar.ConfigName()
	require.NoError(t, err)
	require.Equal(t, m1, m2, "the tarball holds another image than the layout's linux/%s", runtime.GOARCH)

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

	t.Run("SBOM", func(t *testing.T) { requireSBOM(t, r1, string(file)) })
	t.Run("signatures", func(t *testing.T) { requireSigned(t, r1, r2, pub) })
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
		{"platform", func(t *testing.T, o *Options) { o.Archs = []string{"amd64", "wasm"} }, `platform linux/wasm: "wasm" is not a linux GOARCH`},
		{"platform twice", func(t *testing.T, o *Options) { o.Archs = []string{"amd64", "amd64"} }, "platform linux/amd64 is named twice"},
		{"no platform", func(t *testing.T, o *Options) { o.Archs = nil }, "no platform"},
		{"tarball's platform not built", func(t *testing.T, o *Options) { o.TarballArch = "s390x" }, "the tarball's platform linux/s390x is not among those built"},
		{"signing key", func(t *testing.T, o *Options) { o.SignKey = o.CABundle }, "-sign-key: "},
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
