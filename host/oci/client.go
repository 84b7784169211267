package oci

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// DefaultMaxSize bounds a module's size when Options.MaxSize is 0: far
// above the few megabytes a Go or TinyGo module takes, far below what would
// strain the host.
const DefaultMaxSize = 64 << 20

// maxMetadata bounds manifests, config blobs and signature bundles, which
// are a few kilobytes.
const maxMetadata = 4 << 20

// Options say how to reach a registry and what to accept from it.
type Options struct {
	// PlainHTTP talks HTTP to the registry instead of HTTPS, like the oras
	// CLI's --plain-http.
	PlainHTTP bool
	// DockerConfig is a docker config file's content, or a Kubernetes
	// image pull secret's .dockerconfigjson (the same format): the
	// credentials for the registry under "auths". nil sends none.
	DockerConfig []byte
	// DockerConfigFrom names where DockerConfig came from, for messages.
	DockerConfigFrom string
	// HTTPClient, when set, carries the requests (e.g. one that trusts a
	// private CA); nil uses http.DefaultClient.
	HTTPClient *http.Client
	// MaxSize bounds the module layer in bytes; 0 takes DefaultMaxSize.
	MaxSize int64
	// CacheDir keeps pulled manifests and modules, named by digest; empty
	// caches nothing.
	CacheDir string
	// Verifier, when set, requires a signature by its key: Pull checks it
	// before it downloads the module, Describe before it reads the config.
	Verifier *Verifier
}

func (o *Options) maxSize() int64 {
	if o.MaxSize > 0 {
		return o.MaxSize
	}
	return DefaultMaxSize
}

// repository returns a client for the repository of ref, and ref parsed.
func (o *Options) repository(ref string) (*remote.Repository, registry.Reference, error) {
	r, err := registry.ParseReference(ref)
	if err != nil {
		return nil, registry.Reference{}, fmt.Errorf("%q is %w (%w); write it as registry.example.com/policies/retention:1.2.0, optionally with @sha256:DIGEST", ref, ErrReference, err)
	}
	repo, err := remote.NewRepository(r.Registry + "/" + r.Repository)
	if err != nil {
		return nil, registry.Reference{}, fmt.Errorf("image %s: %w", ref, err)
	}
	repo.PlainHTTP = o.PlainHTTP
	client := &auth.Client{Client: o.HTTPClient, Cache: auth.NewCache()}
	client.SetUserAgent("kubeplug")
	if o.DockerConfig != nil {
		store, err := credentials.NewMemoryStoreFromDockerConfig(o.DockerConfig)
		if err != nil {
			return nil, registry.Reference{}, fmt.Errorf("credentials %s: %w: give a docker config file, or the .dockerconfigjson of an image pull secret", o.DockerConfigFrom, err)
		}
		client.Credential = credentials.Credential(store)
	}
	repo.Client = client
	return repo, r, nil
}

// explain turns a registry's refusal into an error that says what to do.
func (o *Options) explain(ref string, err error) error {
	var resp *errcode.ErrorResponse
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		resp = &errcode.ErrorResponse{StatusCode: http.StatusUnauthorized}
	}
	if resp != nil || errors.As(err, &resp) {
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			if o.DockerConfig == nil {
				return fmt.Errorf("image %s: %w: the registry answered %d and no credentials were given: give them with dockerConfig: (a docker config file or an image pull secret's .dockerconfigjson): %w",
					ref, ErrUnauthorized, resp.StatusCode, err)
			}
			return fmt.Errorf("image %s: %w: the registry answered %d to the credentials in %s: check that they are current and may pull this repository: %w",
				ref, ErrUnauthorized, resp.StatusCode, o.DockerConfigFrom, err)
		case http.StatusNotFound:
			return fmt.Errorf("image %s: %w: check the repository and the tag or digest: %w", ref, ErrNotFound, err)
		}
	}
	if errors.Is(err, errdef.ErrNotFound) {
		return fmt.Errorf("image %s: %w: check the repository and the tag or digest: %w", ref, ErrNotFound, err)
	}
	if !o.PlainHTTP && isHTTPResponseToHTTPS(err) {
		return fmt.Errorf("image %s: the registry speaks plain HTTP: set plainHTTP: true (--plain-http) if that is intended: %w", ref, err)
	}
	return fmt.Errorf("image %s: %w", ref, err)
}

// isHTTPResponseToHTTPS reports whether err is Go's TLS client meeting a
// plain HTTP server (net/http says so only in its message).
func isHTTPResponseToHTTPS(err error) bool {
	return strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}
