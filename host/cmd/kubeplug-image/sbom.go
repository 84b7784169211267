package main

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// MediaTypeCycloneDX is the SBOM's media type, and the artifactType of the
// referrer that attaches it to its image (what `oras attach
// --artifact-type` and `cosign attach sbom --type cyclonedx` name).
const MediaTypeCycloneDX = "application/vnd.cyclonedx+json"

// sbomInput is what one platform's image holds, as the SBOM lists it.
type sbomInput struct {
	o      Options
	arch   string
	image  v1.Hash // the platform's image manifest, the SBOM's subject
	binary []byte
	mods   []entry // the modules layer
	ca     []byte
}

// makeSBOM lists what one platform's image is made of as a CycloneDX 1.6
// document: the kubeplug binary with the Go modules and the Go standard
// library its build info names (what `go version -m` prints of it), each
// module file under ModulesDir and the CA bundle by their SHA-256. It
// follows cyclonedx-gomod's binary mode (package URLs, cdx:gomod
// properties, a module's go.sum hash as its SHA-256) and names the standard
// library as syft does, which scanners such as grype match. The same
// inputs give the same bytes: no serial number, the timestamp is the
// image's creation time, and every list is sorted.
func makeSBOM(in sbomInput) ([]byte, error) {
	bi, err := buildinfo.Read(bytes.NewReader(in.binary))
	if err != nil {
		return nil, fmt.Errorf("the binary's build info: %w", err)
	}
	image := &cdx.Component{
		BOMRef: "image", Type: cdx.ComponentTypeContainer,
		Name: in.o.Repository, Version: in.o.Version,
		PackageURL: ociPURL(in.o.Repository, in.image, in.arch, in.o.Version),
	}
	bin := goApplication(bi, in.o.Version, in.binary)
	var (
		components = []cdx.Component{bin.component}
		deps       = []cdx.Dependency{bin.dependency}
		imageDeps  = []string{bin.component.BOMRef}
		libraries  = map[string]cdx.Component{}
	)
	for _, l := range bin.libraries {
		libraries[l.BOMRef] = l
	}
	for _, m := range in.mods {
		if strings.HasSuffix(m.name, "/") {
			continue
		}
		c := fileComponent("/"+m.name, m.data, cdx.ComponentTypeApplication)
		components = append(components, c)
		imageDeps = append(imageDeps, c.BOMRef)
	}
	ca := fileComponent(CABundlePath, in.ca, cdx.ComponentTypeFile)
	components = append(components, ca)
	imageDeps = append(imageDeps, ca.BOMRef)
	for _, l := range libraries {
		components = append(components, l)
		deps = append(deps, cdx.Dependency{Ref: l.BOMRef})
	}
	sort.Strings(imageDeps)
	deps = append(deps, cdx.Dependency{Ref: image.BOMRef, Dependencies: &imageDeps})
	sort.Slice(components, func(i, j int) bool { return components[i].BOMRef < components[j].BOMRef })
	sort.Slice(deps, func(i, j int) bool { return deps[i].Ref < deps[j].Ref })

	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{
		Timestamp: time.Unix(in.o.Epoch, 0).UTC().Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: "kubeplug-image", Version: in.o.Version,
		}}},
		Component: image,
	}
	bom.Components = &components
	bom.Dependencies = &deps
	var buf bytes.Buffer
	if err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return nil, fmt.Errorf("encode the SBOM: %w", err)
	}
	return buf.Bytes(), nil
}

// goBinary is a Go binary's component, the libraries it was built from
// and the dependency that joins them.
type goBinary struct {
	component  cdx.Component
	libraries  []cdx.Component
	dependency cdx.Dependency
}

func goApplication(bi *buildinfo.BuildInfo, version string, binary []byte) goBinary {
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	goos, goarch := settings["GOOS"], settings["GOARCH"]
	// The command's package within its module, as a purl subpath.
	sub := ""
	if p := strings.TrimPrefix(strings.TrimPrefix(bi.Path, bi.Main.Path), "/"); p != "" {
		sub = "#" + p
	}
	mainRef := goPURL(bi.Main.Path, version, "", "") + sub
	props := []cdx.Property{
		{Name: "cdx:gomod:binary:name", Value: Entrypoint},
		{Name: "cdx:gomod:build:env:GOVERSION", Value: bi.GoVersion},
	}
	for _, k := range []string{"CGO_ENABLED", "GOARCH", "GOOS", "GOAMD64", "GOARM64"} {
		if v, ok := settings[k]; ok {
			props = append(props, cdx.Property{Name: "cdx:gomod:build:env:" + k, Value: v})
		}
	}
	if v, ok := settings["-compiler"]; ok {
		props = append(props, cdx.Property{Name: "cdx:gomod:build:compiler", Value: v})
	}
	sort.Slice(props, func(i, j int) bool { return props[i].Name < props[j].Name })
	sum := sha256.Sum256(binary)
	b := goBinary{component: cdx.Component{
		BOMRef: mainRef, Type: cdx.ComponentTypeApplication,
		Name: bi.Main.Path, Version: version,
		PackageURL: goPURL(bi.Main.Path, version, goos, goarch) + sub,
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sum[:])}},
		Properties: &props,
	}}
	// The standard library, as syft names it: scanners match Go's own
	// vulnerabilities on it.
	std := strings.TrimPrefix(bi.GoVersion, "go")
	b.libraries = append(b.libraries, cdx.Component{
		BOMRef: "pkg:golang/stdlib@" + std, Type: cdx.ComponentTypeLibrary,
		Name: "stdlib", Version: bi.GoVersion, PackageURL: "pkg:golang/stdlib@" + std,
	})
	for _, d := range bi.Deps {
		b.libraries = append(b.libraries, goLibrary(d, version, goos, goarch))
	}
	refs := make([]string, 0, len(b.libraries))
	for _, l := range b.libraries {
		refs = append(refs, l.BOMRef)
	}
	sort.Strings(refs)
	b.dependency = cdx.Dependency{Ref: mainRef, Dependencies: &refs}
	return b
}

// goLibrary is a module the binary was built from: the replacement when
// there is one, since that is the code in the binary; a module replaced by
// a directory of this repository (the root module, from host/go.mod's
// replace) is this build's, at its version.
func goLibrary(d *debug.Module, version, goos, goarch string) cdx.Component {
	m := *d
	var props []cdx.Property
	switch {
	case d.Replace != nil && localDir(d.Replace.Path):
		m.Version, m.Sum = version, ""
		props = append(props, cdx.Property{Name: "cdx:gomod:module:replaced-by-directory", Value: d.Replace.Path})
	case d.Replace != nil:
		m = *d.Replace
		props = append(props, cdx.Property{Name: "cdx:gomod:module:replaces", Value: d.Path + "@" + d.Version})
	}
	c := cdx.Component{
		BOMRef: goPURL(m.Path, m.Version, "", ""), Type: cdx.ComponentTypeLibrary,
		Name: m.Path, Version: m.Version, Scope: cdx.ScopeRequired,
		PackageURL: goPURL(m.Path, m.Version, goos, goarch),
	}
	if props != nil {
		c.Properties = &props
	}
	// go.sum's h1: is a SHA-256 (of the module's file hashes), which
	// cyclonedx-gomod reports as the module's hash.
	if h, ok := strings.CutPrefix(m.Sum, "h1:"); ok {
		if raw, err := base64.StdEncoding.DecodeString(h); err == nil && len(raw) == sha256.Size {
			c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(raw)}}
		}
	}
	return c
}

// localDir reports whether a replacement is a directory rather than a
// module path, as go.mod tells them apart.
func localDir(p string) bool {
	return p == "." || p == ".." || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/")
}

// fileComponent is a file of the image, named by its path and hash.
func fileComponent(name string, data []byte, t cdx.ComponentType) cdx.Component {
	sum := sha256.Sum256(data)
	return cdx.Component{
		BOMRef: "file:" + name, Type: t, Name: name,
		Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sum[:])}},
	}
}

// goPURL is a Go module's package URL, with the platform's qualifiers
// when given (they sort before type, as the purl spec orders them).
func goPURL(module, version, goos, goarch string) string {
	u := "pkg:golang/" + module
	if version != "" {
		u += "@" + purlEscape(version)
	}
	q := url.Values{"type": {"module"}}
	if goos != "" {
		q.Set("goos", goos)
		q.Set("goarch", goarch)
	}
	return u + "?" + q.Encode()
}

// ociPURL is the image's package URL: its digest, its platform and tag.
func ociPURL(repository string, digest v1.Hash, arch, tag string) string {
	q := url.Values{"arch": {arch}, "tag": {tag}}
	if dir := path.Dir(repository); dir != "." {
		q.Set("repository_url", repository)
	}
	return "pkg:oci/" + path.Base(repository) + "@" + purlEscape(digest.String()) + "?" + q.Encode()
}

// purlEscape percent-encodes a purl's version, ':' included.
func purlEscape(s string) string {
	return strings.ReplaceAll(url.PathEscape(s), ":", "%3A")
}
