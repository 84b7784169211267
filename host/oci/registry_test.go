package oci_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/kubeplug/kubeplug/host/oci"
)

// testRegistry is go-containerregistry's in-memory registry served on
// loopback, with hooks that a test can set to play a registry that asks for
// credentials or one that damages what it sends.
type testRegistry struct {
	srv *httptest.Server
	// host is host:port, for references.
	host string
	// blobGets counts GET requests for blobs.
	blobGets atomic.Int64
	// user and password, when set, are required (HTTP basic auth).
	user, password string
	// corrupt, when set, flips a byte of every blob served.
	corrupt atomic.Bool
	// requests counts every request.
	requests atomic.Int64
	// misbehave, when set, sees every request first and answers those it
	// returns true for: a registry that stalls, trickles or lies.
	misbehave atomic.Pointer[func(http.ResponseWriter, *http.Request) bool]
	// inner is the registry behind the hooks.
	inner http.Handler
}

func newRegistry(t *testing.T, tls bool) *testRegistry {
	t.Helper()
	r := &testRegistry{}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true))
	r.inner = inner
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if f := r.misbehave.Load(); f != nil && (*f)(w, req) {
			return
		}
		if r.user != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != r.user || p != r.password {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		}
		isBlob := req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/")
		if isBlob {
			r.blobGets.Add(1)
		}
		if isBlob && r.corrupt.Load() {
			rec := httptest.NewRecorder()
			inner.ServeHTTP(rec, req)
			body := rec.Body.Bytes()
			if len(body) > 0 {
				body[len(body)-1] ^= 0xff
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body)
			return
		}
		inner.ServeHTTP(w, req)
	})
	if tls {
		r.srv = httptest.NewTLSServer(h)
	} else {
		r.srv = httptest.NewServer(h)
	}
	t.Cleanup(r.srv.Close)
	r.host = strings.TrimPrefix(strings.TrimPrefix(r.srv.URL, "http://"), "https://")
	return r
}

// options returns the options that reach r.
func (r *testRegistry) options() oci.Options {
	o := oci.Options{PlainHTTP: r.srv.TLS == nil}
	if r.srv.TLS != nil {
		o.HTTPClient = r.srv.Client()
	}
	return o
}

// ref returns a reference to repository:tag in r.
func (r *testRegistry) ref(repoTag string) string { return r.host + "/" + repoTag }

// dockerConfig returns a docker config file's content with user:password
// for r.
func (r *testRegistry) dockerConfig(user, password string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	return fmt.Appendf(nil, `{"auths": {%q: {"auth": %q}}}`, r.host, auth)
}

// wasmBytes returns a distinct fake module: the wasm magic and version,
// then n bytes. The oci package hands bytes out; it does not load them.
func wasmBytes(n int, fill byte) []byte {
	return append([]byte{0, 'a', 's', 'm', 1, 0, 0, 0}, bytes.Repeat([]byte{fill}, n)...)
}

// textLogger logs as text to w.
func textLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
