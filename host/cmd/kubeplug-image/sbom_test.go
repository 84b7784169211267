package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2/content"
	orasoci "oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry"

	"github.com/kubeplug/kubeplug/host/oci"
	"github.com/kubeplug/kubeplug/host/oci/ocitest"
)

// requireSBOM checks this machine's platform's SBOM: valid CycloneDX 1.6,
// about its image, listing every module `go version -m` prints of the
// binary (goVersionM) at its version, the Go standard library, and each
// file the image adds by its SHA-256; and attached to its image in the
// layout as a referrer of the SBOM's type.
func requireSBOM(t *testing.T, r Result, goVersionM string) {
	var p Platform
	for _, q := range r.Platforms {
		if q.Arch == runtime.GOARCH {
			p = q
		}
	}
	data, err := os.ReadFile(p.SBOM)
	require.NoError(t, err)
	requireCycloneDX16(t, data)

	var bom cdx.BOM
	require.NoError(t, cdx.NewBOMDecoder(bytes.NewReader(data), cdx.BOMFileFormatJSON).Decode(&bom))
	require.Equal(t, cdx.ComponentTypeContainer, bom.Metadata.Component.Type)
	require.Contains(t, bom.Metadata.Component.PackageURL, "@"+strings.ReplaceAll(p.Digest.String(), ":", "%3A")+"?arch="+p.Arch)
	libraries := map[string]string{}
	files := map[string]string{}
	for _, c := range *bom.Components {
		switch c.Type {
		case cdx.ComponentTypeLibrary:
			libraries[c.Name] = c.Version
		case cdx.ComponentTypeApplication, cdx.ComponentTypeFile:
			files[c.Name] = (*c.Hashes)[0].Value
		}
	}
	want := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(goVersionM))
	dep := ""
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && strings.HasSuffix(f[0], ":"):
			want["stdlib"] = f[1]
		case len(f) >= 3 && f[0] == "dep":
			dep, want[f[1]] = f[1], f[2]
		case len(f) >= 2 && f[0] == "=>" && strings.HasPrefix(f[1], "."):
			// This repository's root module, built at this version.
			want[dep] = testVersion
		case len(f) >= 3 && f[0] == "=>":
			// The replacement is the code in the binary.
			delete(want, dep)
			want[f[1]] = f[2]
		}
	}
	require.Greater(t, len(want), 20, "go version -m printed too few modules:\n%s", goVersionM)
	require.Equal(t, want, libraries, "the SBOM's libraries are the binary's modules")
	for _, n := range []string{"/modules/alpha.wasm", "/modules/zeta.wasm", CABundlePath} {
		require.Contains(t, files, n)
	}
	sum := sha256.Sum256([]byte("\x00asm\x01\x00\x00\x00alpha.wasm"))
	require.Equal(t, hex.EncodeToString(sum[:]), files["/modules/alpha.wasm"])

	ctx := context.Background()
	store, err := orasoci.NewFromFS(ctx, os.DirFS(r.Layout))
	require.NoError(t, err)
	refs, err := registry.Referrers(ctx, store, imageDescriptor(t, store, p.Digest.String()), MediaTypeCycloneDX)
	require.NoError(t, err)
	require.Len(t, refs, 1)
	m, err := content.FetchAll(ctx, store, refs[0])
	require.NoError(t, err)
	var man ocispec.Manifest
	require.NoError(t, json.Unmarshal(m, &man))
	require.Len(t, man.Layers, 1)
	attached, err := content.FetchAll(ctx, store, man.Layers[0])
	require.NoError(t, err)
	require.Equal(t, string(data), string(attached))
}

// requireCycloneDX16 validates data against CycloneDX 1.6's JSON schema,
// as cyclonedx-go's module ships it.
func requireCycloneDX16(t *testing.T, data []byte) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/CycloneDX/cyclonedx-go").Output()
	require.NoError(t, err)
	dir := filepath.Join(strings.TrimSpace(string(out)), "schema")
	c := jsonschema.NewCompiler()
	// The 1.6 schema names its two neighbours by these names; the module
	// ships the signature schema as jsf-0.82.schemax.json.
	for file, url := range map[string]string{
		"spdx.schema.json":      "http://cyclonedx.org/schema/spdx.schema.json",
		"jsf-0.82.schemax.json": "http://cyclonedx.org/schema/jsf-0.82.schema.json",
		"bom-1.6.schema.json":   "http://cyclonedx.org/schema/bom-1.6.schema.json",
	} {
		f, err := os.Open(filepath.Join(dir, file))
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		require.NoError(t, err, file)
		require.NoError(t, c.AddResource(url, doc), file)
	}
	schema, err := c.Compile("http://cyclonedx.org/schema/bom-1.6.schema.json")
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	require.NoError(t, schema.Validate(doc))
}

// imageDescriptor describes the image manifest of digest d in store.
func imageDescriptor(t *testing.T, store content.ReadOnlyStorage, d string) ocispec.Descriptor {
	t.Helper()
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(d)}
	rc, err := store.Fetch(context.Background(), ocispec.Descriptor{Digest: desc.Digest})
	require.NoError(t, err)
	defer rc.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(rc)
	require.NoError(t, err)
	desc.Size = int64(buf.Len())
	return desc
}

// requireSigned: the signed build's index, images and SBOMs verify with
// the key, as a module's signature does, and with no other key; the
// unsigned build's do not, and it says so.
func requireSigned(t *testing.T, unsigned, signed Result, pub string) {
	ctx := context.Background()
	v, err := oci.LoadVerifier(pub)
	require.NoError(t, err)
	_, otherPub := ocitest.KeyPair(t, t.TempDir(), "other")
	other, err := oci.LoadVerifier(otherPub)
	require.NoError(t, err)

	store, err := orasoci.NewFromFS(ctx, os.DirFS(signed.Layout))
	require.NoError(t, err)
	index, err := store.Resolve(ctx, testVersion)
	require.NoError(t, err)
	require.NoError(t, v.VerifyManifest(ctx, store, index))
	require.ErrorIs(t, other.VerifyManifest(ctx, store, index), oci.ErrSignature)
	for _, p := range signed.Platforms {
		img := imageDescriptor(t, store, p.Digest.String())
		require.NoError(t, v.VerifyManifest(ctx, store, img), "linux/%s", p.Arch)
		sboms, err := registry.Referrers(ctx, store, img, MediaTypeCycloneDX)
		require.NoError(t, err)
		require.Len(t, sboms, 1)
		require.NoError(t, v.VerifyManifest(ctx, store, sboms[0]), "linux/%s's SBOM", p.Arch)
	}

	plain, err := orasoci.NewFromFS(ctx, os.DirFS(unsigned.Layout))
	require.NoError(t, err)
	index, err = plain.Resolve(ctx, testVersion)
	require.NoError(t, err)
	require.ErrorIs(t, v.VerifyManifest(ctx, plain, index), oci.ErrUnsigned)

	var out bytes.Buffer
	require.NoError(t, report(&out, unsigned))
	require.Contains(t, out.String(), "unsigned: no -sign-key given")
	out.Reset()
	require.NoError(t, report(&out, signed))
	require.Contains(t, out.String(), "signed: the index, each image and each SBOM")
}
