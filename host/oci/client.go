package oci

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/internal/input"
)

// DefaultMaxSize bounds a module's size when Options.MaxSize is 0: the
// bound of a module file (input.MaxModuleBytes), so that neither source is
// a way around the other.
const DefaultMaxSize = input.MaxModuleBytes

// maxMetadata bounds manifests, config blobs, referrer pages and signature
// bundles, which are a few kilobytes.
const maxMetadata = 4 << 20

// DefaultTimeout bounds one registry operation (a pull: the manifest, the
// signatures and the module; a push; a tag's resolution) when
// Options.Timeout is 0. A 64 MiB module takes it at 0.6 MB/s.
const DefaultTimeout = 2 * time.Minute

// The bounds of each HTTP exchange with a registry, inside the operation's
// Timeout: a registry that accepts the connection and never answers fails
// the request after responseHeaderTimeout, and one that answers too slowly
// fails the operation at its Timeout.
const (
	dialTimeout           = 10 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	responseHeaderTimeout = 30 * time.Second
	maxResponseHeader     = 64 << 10
)

// registryClient carries registry requests when Options.HTTPClient is nil:
// net/http's transport with every wait bounded, under oras-go's retry of
// 5xx, 429 and network errors (5 retries, backoff from 200ms).
var registryClient = &http.Client{Transport: retry.NewTransport(&http.Transport{
	Proxy:                  http.ProxyFromEnvironment,
	DialContext:            (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout:    tlsHandshakeTimeout,
	ResponseHeaderTimeout:  responseHeaderTimeout,
	ExpectContinueTimeout:  time.Second,
	IdleConnTimeout:        90 * time.Second,
	MaxIdleConns:           16,
	MaxResponseHeaderBytes: maxResponseHeader,
	ForceAttemptHTTP2:      true,
})}

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
	// private CA); nil uses a client whose connection, TLS handshake and
	// wait for response headers are bounded (10s, 10s, 30s).
	HTTPClient *http.Client
	// Timeout bounds each operation (Pull, Describe, Resolve, Push, Sign)
	// as a whole, all its requests and transfers; 0 takes DefaultTimeout.
	Timeout time.Duration
	// MaxSize bounds the module layer in bytes; 0 takes DefaultMaxSize.
	MaxSize int64
	// CacheDir keeps pulled manifests and modules, named by digest; empty
	// caches nothing.
	CacheDir string
	// Logger is told of cache entries refused; nil discards.
	Logger *slog.Logger
	// Verifier, when set, requires a signature by its key: Pull checks it
	// before it downloads the module, Describe before it reads the config.
	Verifier *Verifier
}

// bounded returns ctx bounded by the operation's timeout.
func (o *Options) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.timeout())
}

func (o *Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (o *Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
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
	repo.MaxMetadataBytes = maxMetadata
	repo.ReferrerListMaxPages = maxReferrerPages
	httpClient := o.HTTPClient
	if httpClient == nil {
		httpClient = registryClient
	}
	client := &auth.Client{Client: httpClient, Cache: auth.NewCache()}
	client.SetUserAgent("kubeplug")
	if o.DockerConfig != nil {
		// oras-go quotes a malformed auth field whole in its error: the
		// entries are checked first by a function that names the entry
		// and never its bytes, and oras-go's error is not passed on.
		if _, err := config.CheckDockerConfig(o.DockerConfigFrom, o.DockerConfig); err != nil {
			return nil, registry.Reference{}, fmt.Errorf("credentials: %w", err)
		}
		store, err := credentials.NewMemoryStoreFromDockerConfig(o.DockerConfig)
		if err != nil {
			return nil, registry.Reference{}, fmt.Errorf("credentials %s: not a usable docker config (its content is not quoted: it holds secrets); give a docker config file, or the .dockerconfigjson of an image pull secret", o.DockerConfigFrom)
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
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("image %s: %w: the registry did not answer, or not all of it, within %s; nothing was loaded: check that it is up and reachable, or raise --image-timeout: %w",
			ref, ErrTimeout, o.timeout(), err)
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
