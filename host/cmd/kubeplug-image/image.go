package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubeplug/kubeplug/host/oci"
)

// The image's fixed facts: what the Deployment, the chart and the install
// test rely on.
const (
	// Entrypoint is the binary's path in the image.
	Entrypoint = "/kubeplug"
	// ModulesDir holds the reference and example modules.
	ModulesDir = "/modules"
	// CABundlePath is where the CA bundle is, and SSL_CERT_FILE says so.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// UID and GID are the non-root user's (nonroot, as distroless names it).
	UID, GID = 65532, 65532
)

// Budgets on what goes into the image, checked before a file is read.
const (
	maxModules    = 64
	maxModuleSize = 64 << 20
	maxCABundle   = 4 << 20
)

// moduleName is what a module's file name may be: it becomes a path in the
// image and in host.yaml files.
var moduleName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}\.wasm$`)

// Result is what Build wrote.
type Result struct {
	Tag string
	// Digest is the image index's, what a tag of the image names.
	Digest    v1.Hash
	Platforms []Platform
	Layout    string
	// Tarball holds the image of TarballArch alone, for docker load.
	Tarball     string
	TarballArch string
	// Signed says whether the images carry signatures.
	Signed bool
}

// Platform is one platform's image in the index.
type Platform struct {
	Arch   string
	Digest v1.Hash
	// SBOM is the file holding its SBOM, also attached to it in Layout.
	SBOM string
}

// built is one platform's image, ready to be written.
type built struct {
	arch   string
	image  v1.Image
	digest v1.Hash
	sbom   []byte
}

// Build cross-compiles the binary for each platform and writes the image
// index to o.Out.
func Build(ctx context.Context, o Options) (Result, error) {
	if err := o.validate(); err != nil {
		return Result{}, err
	}
	tag, err := name.NewTag(o.Repository + ":" + o.Version)
	if err != nil {
		return Result{}, fmt.Errorf("-repository %q with version %q is no image tag: %w", o.Repository, o.Version, err)
	}
	// The inputs are read and checked before anything is written or
	// compiled.
	var signer *oci.Signer
	if o.SignKey != "" {
		if signer, err = oci.LoadSigner(o.SignKey); err != nil {
			return Result{}, fmt.Errorf("-sign-key: %w", err)
		}
	}
	base, err := baseLayer(o)
	if err != nil {
		return Result{}, err
	}
	mods, err := modulesLayer(o.Modules)
	if err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return Result{}, err
	}
	archs := slices.Sorted(slices.Values(o.Archs))
	images := make([]built, 0, len(archs))
	for _, arch := range archs {
		b, err := buildPlatform(ctx, o, arch, base, mods)
		if err != nil {
			return Result{}, err
		}
		images = append(images, b)
	}
	idx, err := imageIndex(o, images)
	if err != nil {
		return Result{}, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return Result{}, fmt.Errorf("image index digest: %w", err)
	}
	res := Result{
		Tag: tag.String(), Digest: digest, Signed: signer != nil, TarballArch: o.TarballArch,
		Layout: filepath.Join(o.Out, "oci"), Tarball: filepath.Join(o.Out, "kubeplug.tar"),
	}
	if err := writeLayout(ctx, res.Layout, o, tag, idx, images, signer); err != nil {
		return Result{}, err
	}
	// An earlier build's SBOMs of platforms not built now would read as
	// this build's.
	stale, _ := filepath.Glob(filepath.Join(o.Out, "sbom-linux-*.cdx.json"))
	for _, f := range stale {
		if err := os.Remove(f); err != nil {
			return Result{}, err
		}
	}
	for _, b := range images {
		p := Platform{Arch: b.arch, Digest: b.digest, SBOM: filepath.Join(o.Out, "sbom-linux-"+b.arch+".cdx.json")}
		if err := os.WriteFile(p.SBOM, b.sbom, 0o644); err != nil {
			return Result{}, err
		}
		res.Platforms = append(res.Platforms, p)
		if b.arch == o.TarballArch {
			if err := tarball.WriteToFile(res.Tarball, tag, b.image); err != nil {
				return Result{}, fmt.Errorf("write image tarball %s: %w", res.Tarball, err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(o.Out, "digest"), []byte(digest.String()+"\n"), 0o644); err != nil {
		return Result{}, err
	}
	return res, nil
}

// buildPlatform compiles the binary for linux/arch, makes its image and
// the image's SBOM.
func buildPlatform(ctx context.Context, o Options, arch string, base, mods []entry) (built, error) {
	bin, err := compile(ctx, o, arch)
	if err != nil {
		return built{}, err
	}
	img, err := assemble(o, arch, base, mods, bin)
	if err != nil {
		return built{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return built{}, fmt.Errorf("linux/%s image digest: %w", arch, err)
	}
	sbom, err := makeSBOM(sbomInput{o: o, arch: arch, image: d, binary: bin, mods: mods, ca: fileData(base, CABundlePath)})
	if err != nil {
		return built{}, fmt.Errorf("linux/%s: %w", arch, err)
	}
	return built{arch: arch, image: img, digest: d, sbom: sbom}, nil
}

// fileData is the content of the entry at path (absolute) in es.
func fileData(es []entry, path string) []byte {
	for _, e := range es {
		if "/"+e.name == path {
			return e.data
		}
	}
	return nil
}

// assemble makes linux/arch's image of three layers, base, modules and
// binary, in the order they change least often to most: only the last
// differs between platforms.
func assemble(o Options, arch string, base, mods []entry, bin []byte) (v1.Image, error) {
	created := time.Unix(o.Epoch, 0).UTC()
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	for _, l := range []struct {
		what    string
		entries []entry
	}{
		{"base: users, CA bundle, mount points", base},
		{"modules under " + ModulesDir, mods},
		{"the kubeplug binary", []entry{{name: strings.TrimPrefix(Entrypoint, "/"), mode: 0o755, data: bin}}},
	} {
		layer, err := tarLayer(l.entries)
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", l.what, err)
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:     layer,
			MediaType: types.OCILayer,
			History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: "kubeplug-image: " + l.what},
		})
		if err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: created}
	cf.OS, cf.Architecture = "linux", arch
	labels := imageLabels(o)
	cf.Config = v1.Config{
		Entrypoint: []string{Entrypoint},
		User:       fmt.Sprintf("%d:%d", UID, GID),
		WorkingDir: "/",
		Env:        []string{"PATH=/", "SSL_CERT_FILE=" + CABundlePath},
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels).(v1.Image), nil
}

// entry is one file or directory (name ending in "/") of a layer, owned by
// root unless uid says otherwise.
type entry struct {
	name     string
	mode     int64
	uid, gid int
	data     []byte
}

func baseLayer(o Options) ([]entry, error) {
	ca, err := readCapped(o.CABundle, maxCABundle, "-ca-bundle")
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("-ca-bundle %s holds no PEM certificate: name a bundle such as /etc/ssl/certs/ca-certificates.crt (Debian's ca-certificates package)", o.CABundle)
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	return []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		// The host's configuration, a ConfigMap mounted here.
		{name: "etc/kubeplug/", mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: strings.TrimPrefix(CABundlePath, "/"), mode: 0o644, data: ca},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: UID, gid: GID},
		{name: "tmp/", mode: 0o1777},
		{name: "var/", mode: 0o755},
		{name: "var/cache/", mode: 0o755},
		// --cache-dir: an emptyDir in a pod; writable by the user when
		// the image runs without one.
		{name: "var/cache/kubeplug/", mode: 0o755, uid: UID, gid: GID},
	}, nil
}

func modulesLayer(dir string) ([]entry, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("-modules: %w (run make guests first)", err)
	}
	es := []entry{{name: strings.TrimPrefix(ModulesDir, "/") + "/", mode: 0o755}}
	for _, de := range des {
		if de.IsDir() || filepath.Ext(de.Name()) != ".wasm" {
			continue
		}
		if !moduleName.MatchString(de.Name()) {
			return nil, fmt.Errorf("-modules: %s: a module's file name must match %s", filepath.Join(dir, de.Name()), moduleName)
		}
		if len(es) > maxModules {
			return nil, fmt.Errorf("-modules: %s holds more than %d modules", dir, maxModules)
		}
		data, err := readCapped(filepath.Join(dir, de.Name()), maxModuleSize, "-modules")
		if err != nil {
			return nil, err
		}
		es = append(es, entry{name: strings.TrimPrefix(ModulesDir, "/") + "/" + de.Name(), mode: 0o644, data: data})
	}
	if len(es) == 1 {
		return nil, fmt.Errorf("-modules: %s holds no .wasm file (run make guests first)", dir)
	}
	return es, nil
}

// readCapped reads a regular file of at most limit bytes.
func readCapped(path string, limit int64, flagName string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %s is not a regular file", flagName, path)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %s is %d bytes, more than the %d allowed", flagName, path, fi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %s grew past the %d bytes allowed while read", flagName, path, limit)
	}
	return data, nil
}

// epoch0 is every entry's modification time: the layers do not depend on
// when or where they were built.
var epoch0 = time.Unix(0, 0).UTC()

// tarLayer writes es, sorted by name, with fixed owners, modes and times.
func tarLayer(es []entry) (v1.Layer, error) {
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			ModTime: epoch0, Format: tar.FormatPAX,
		}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("%s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("%s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression))
}
