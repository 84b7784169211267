package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
)

// mediaTypeDockerManifest is Docker's image manifest, which has the fields
// of OCI's; some tools still push it.
const mediaTypeDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"

// Artifact is a module found in a registry.
type Artifact struct {
	// Ref is the reference as given; Pinned is its repository with the
	// manifest's digest, which names exactly these bytes.
	Ref, Pinned string
	// Digest is the manifest's digest.
	Digest digest.Digest
	// Layout is the layout the artifact was found in.
	Layout Layout
	// Size and SHA256 (hex, as sha256sum prints it) describe the module.
	Size   int64
	SHA256 string
	// Wasm is the module; nil from Describe.
	Wasm []byte
	// Config is the published description, for kubeplug's layout only
	// (nil otherwise); nil from Pull.
	Config *ModuleConfig
}

// Pull fetches the module ref names. It resolves a tag to a digest (a
// digest in ref pins it, and a tag beside it is ignored), checks the
// manifest's layout, the signature when o.Verifier is set, and the module's
// size before it downloads it, and its digest after.
//
// The whole pull, every request and transfer, is bounded by o.Timeout. A
// pull that the cache can serve (a digest, the signature bundle kept from
// an earlier verification, the module) sends no request.
func Pull(ctx context.Context, ref string, o Options) (*Artifact, error) {
	ctx, cancel := o.bounded(ctx)
	defer cancel()
	r, err := o.resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := o.checkSignature(ctx, r); err != nil {
		return nil, err
	}
	wasm, err := o.blob(ctx, r, r.layer, o.maxSize(), "module")
	if err != nil {
		return nil, err
	}
	a := r.artifact()
	a.Wasm = wasm
	return a, nil
}

// Describe returns what the registry says of the module ref names without
// downloading it: for kubeplug's layout, the published config (the
// module's manifest among it). When o.Verifier is set the signature is
// checked first, as Pull checks it: what is described is what Pull would
// accept.
func Describe(ctx context.Context, ref string, o Options) (*Artifact, error) {
	ctx, cancel := o.bounded(ctx)
	defer cancel()
	r, err := o.resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := o.checkSignature(ctx, r); err != nil {
		return nil, err
	}
	a := r.artifact()
	if !r.layout.HasManifest {
		return a, nil
	}
	b, err := o.blob(ctx, r, r.manifest.Config, maxMetadata, "config")
	if err != nil {
		return nil, err
	}
	var cfg ModuleConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("image %s: %w: its config blob is not a kubeplug module config: %w", ref, ErrLayout, err)
	}
	a.Config = &cfg
	return a, nil
}

// Resolve returns the digest of the manifest ref names now.
func Resolve(ctx context.Context, ref string, o Options) (digest.Digest, error) {
	ctx, cancel := o.bounded(ctx)
	defer cancel()
	repo, parsed, err := o.repository(ref)
	if err != nil {
		return "", err
	}
	desc, err := repo.Resolve(ctx, parsed.Reference)
	if err != nil {
		return "", o.explain(ref, err)
	}
	return desc.Digest, nil
}

// resolved is a module's manifest, found and checked.
type resolved struct {
	repo     *remote.Repository
	ref      registry.Reference
	given    string
	desc     ocispec.Descriptor
	manifest ocispec.Manifest
	layout   Layout
	layer    ocispec.Descriptor
}

func (r *resolved) artifact() *Artifact {
	return &Artifact{
		Ref:    r.given,
		Pinned: r.ref.Registry + "/" + r.ref.Repository + "@" + r.desc.Digest.String(),
		Digest: r.desc.Digest,
		Layout: r.layout,
		Size:   r.layer.Size,
		SHA256: r.layer.Digest.Encoded(),
	}
}

// resolve fetches ref's manifest (from the cache when ref is a digest the
// cache holds) and finds the module layer in it.
func (o *Options) resolve(ctx context.Context, ref string) (*resolved, error) {
	repo, parsed, err := o.repository(ref)
	if err != nil {
		return nil, err
	}
	r := &resolved{repo: repo, ref: parsed, given: ref}
	var raw []byte
	var cacheErr error
	if d, err := parsed.Digest(); err == nil {
		raw, cacheErr = o.cached(d, maxMetadata)
		r.desc = ocispec.Descriptor{Digest: d, Size: int64(len(raw))}
	}
	if raw == nil {
		desc, rc, err := repo.FetchReference(ctx, parsed.Reference)
		if err != nil {
			return nil, errors.Join(o.explain(ref, err), cacheErr)
		}
		defer rc.Close()
		if desc.Size > maxMetadata {
			return nil, fmt.Errorf("image %s: %w: its manifest is %d bytes, more than the %d a module's takes; nothing more was read", ref, ErrTooLarge, desc.Size, maxMetadata)
		}
		if raw, err = content.ReadAll(rc, desc); err != nil {
			return nil, o.readError(ref, "manifest", err)
		}
		r.desc = desc
		if err := (cache{o.CacheDir}).put(desc.Digest, raw); err != nil {
			return nil, err
		}
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("image %s: %w: its manifest is not JSON: %w", ref, ErrLayout, err)
	}
	switch m.MediaType {
	case ocispec.MediaTypeImageManifest, mediaTypeDockerManifest, "":
	case ocispec.MediaTypeImageIndex:
		return nil, fmt.Errorf("image %s: %w: it is an image index, not one module: name the module's own manifest by its digest", ref, ErrLayout)
	default:
		return nil, fmt.Errorf("image %s: %w: its manifest has media type %s, not an image manifest", ref, ErrLayout, m.MediaType)
	}
	if m.Config.MediaType == "" && len(m.Layers) == 0 {
		return nil, fmt.Errorf("image %s: %w: it has no config and no layers (is it an image index?)", ref, ErrLayout)
	}
	r.desc.MediaType = ocispec.MediaTypeImageManifest
	if m.MediaType != "" {
		r.desc.MediaType = m.MediaType
	}
	r.manifest = m
	layout, ok := layoutOf(m.Config.MediaType)
	if !ok {
		return nil, fmt.Errorf("image %s: %w: its config has media type %q; kubeplug reads %s: push the module with kubeplug push",
			ref, ErrLayout, m.Config.MediaType, layoutNames())
	}
	r.layout = layout
	var found []ocispec.Descriptor
	for _, l := range m.Layers {
		if l.MediaType == layout.LayerType {
			found = append(found, l)
		}
	}
	if len(found) != 1 || len(m.Layers) != 1 {
		return nil, fmt.Errorf("image %s: %w: a %s artifact has exactly one layer of type %s; this one has %d layers, %d of that type",
			ref, ErrLayout, layout.Name, layout.LayerType, len(m.Layers), len(found))
	}
	r.layer = found[0]
	return r, nil
}

// blob returns the blob desc names, from the cache or the registry, after
// checking that it is at most limit bytes and has its digest.
func (o *Options) blob(ctx context.Context, r *resolved, desc ocispec.Descriptor, limit int64, what string) ([]byte, error) {
	if err := desc.Digest.Validate(); err != nil {
		return nil, fmt.Errorf("image %s: %w: its %s has digest %q: %w", r.given, ErrLayout, what, desc.Digest, err)
	}
	if desc.Size < 0 || desc.Size > limit {
		return nil, fmt.Errorf("image %s: %w: its %s is %d bytes and the limit is %d; nothing was downloaded",
			r.given, ErrTooLarge, what, desc.Size, limit)
	}
	b, cacheErr := o.cached(desc.Digest, limit)
	if b != nil && int64(len(b)) == desc.Size {
		return b, nil
	}
	rc, err := r.repo.Fetch(ctx, desc)
	if err != nil {
		return nil, errors.Join(o.explain(r.given, err), cacheErr)
	}
	defer rc.Close()
	b, err = content.ReadAll(rc, desc)
	if err != nil {
		return nil, o.readError(r.given, what, err)
	}
	if err := (cache{o.CacheDir}).put(desc.Digest, b); err != nil {
		return nil, err
	}
	return b, nil
}

// cached returns the blob d from the cache, nil when the cache does not
// hold it; an entry the cache refused is logged, and returned as an error
// for the caller to add to the registry's if fetching it again fails.
func (o *Options) cached(d digest.Digest, limit int64) ([]byte, error) {
	b, err := cache{o.CacheDir}.get(d, limit)
	if err != nil {
		o.logger().Warn("image cache entry refused; fetching it again", "digest", d, "err", err)
	}
	return b, err
}

// readError says that what the registry sent is not what it described.
func (o *Options) readError(ref, what string, err error) error {
	if errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) || errors.Is(err, content.ErrInvalidDescriptorSize) {
		return fmt.Errorf("image %s: %w: the registry sent a %s that does not match its digest or size; nothing was loaded (a damaged or tampered registry?): %w",
			ref, ErrDigest, what, err)
	}
	return o.explain(ref, err)
}

func layoutNames() string {
	var s []string
	for _, l := range Layouts {
		s = append(s, fmt.Sprintf("%s (config %s, layer %s)", l.Name, l.ConfigType, l.LayerType))
	}
	return strings.Join(s, ", ")
}
