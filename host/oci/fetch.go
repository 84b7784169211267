package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/kubeplug/kubeplug/host/config"
)

// Source is a module's bytes, verified, and what they are.
type Source struct {
	Wasm []byte
	// SHA256 is Wasm's, as sha256sum prints it.
	SHA256 string
	// Name says where the bytes came from, for logs and the runtime: the
	// file, or the image pinned to the digest it resolved to.
	Name string
	// Digest is the image manifest's digest; empty for a file.
	Digest digest.Digest
}

// FetchOptions are the host's, as opposed to the module entry's, settings
// for fetching modules.
type FetchOptions struct {
	// CacheDir keeps pulled modules by digest; empty keeps none.
	CacheDir string
	// HTTPClient carries registry requests; nil uses one with every wait
	// bounded (see Options.HTTPClient).
	HTTPClient *http.Client
	// Timeout bounds each pull as a whole; 0 takes DefaultTimeout.
	Timeout time.Duration
	// Logger is told of cache entries refused; nil discards.
	Logger *slog.Logger
}

// Fetch returns the bytes of the module entry m names, verified: an image
// (pulled with the entry's registry settings, its signature checked when
// the entry or the file requires one, then its pin), or what any other
// source reads (a file, with its sha256 pin checked; see config.Source).
// The host and `kubeplug test --config` both read modules through it.
func Fetch(ctx context.Context, m *config.Module, fo FetchOptions) (*Source, error) {
	img, ok := m.From().(config.ImageSource)
	if !ok {
		wasm, err := m.ReadContext(ctx)
		if err != nil {
			return nil, err
		}
		return newSource(wasm, m.Source(), ""), nil
	}
	o, err := EntryOptions(m, fo)
	if err != nil {
		return nil, err
	}
	a, err := Pull(ctx, img.Ref, o)
	if err != nil {
		return nil, fmt.Errorf("%s: module %q: %w", m.Where(), m.Name, err)
	}
	if err := m.CheckPin(a.Wasm); err != nil {
		return nil, err
	}
	return newSource(a.Wasm, a.Pinned, a.Digest), nil
}

// EntryOptions returns the options that reach m's registry as its entry
// says: plain HTTP, credentials (read now, so that a renewed secret file
// is used), and the signature it requires.
func EntryOptions(m *config.Module, fo FetchOptions) (Options, error) {
	o := Options{PlainHTTP: m.PlainHTTP, HTTPClient: fo.HTTPClient, CacheDir: fo.CacheDir, Timeout: fo.Timeout, Logger: fo.Logger}
	if m.DockerConfig != "" {
		b, err := config.ReadDockerConfig(m.DockerConfig)
		if err != nil {
			return Options{}, fmt.Errorf("%s: module %q: dockerConfig: %w", m.Where(), m.Name, err)
		}
		o.DockerConfig, o.DockerConfigFrom = b, m.DockerConfig
	}
	if m.PublicKey != "" {
		v, err := LoadVerifier(m.PublicKey)
		if err != nil {
			return Options{}, fmt.Errorf("%s: module %q: signature: %w", m.Where(), m.Name, err)
		}
		o.Verifier = v
	}
	return o, nil
}

func newSource(wasm []byte, name string, d digest.Digest) *Source {
	sum := sha256.Sum256(wasm)
	return &Source{Wasm: wasm, SHA256: hex.EncodeToString(sum[:]), Name: name, Digest: d}
}
