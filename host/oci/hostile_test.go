package oci_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/oci"
)

// guard is how long a test waits for a call that must end by itself; a
// guard against hanging, not a measurement: the bounds under test are far
// shorter.
const guard = time.Minute

// within runs f and fails t if it has not returned within guard: the
// containment under test is gone.
func within[T any](t *testing.T, what string, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(guard):
		t.Fatalf("%s did not return within %s: nothing bounds it", what, guard)
		var zero T
		return zero, nil
	}
}

// misbehave makes reg answer the requests match picks with f, until the
// test ends (then f's waits end too).
func misbehave(t *testing.T, reg *testRegistry, match func(*http.Request) bool, f func(w http.ResponseWriter, req *http.Request, stop <-chan struct{})) {
	t.Helper()
	stop := make(chan struct{})
	h := func(w http.ResponseWriter, req *http.Request) bool {
		if !match(req) {
			return false
		}
		f(w, req, stop)
		return true
	}
	reg.misbehave.Store(&h)
	t.Cleanup(func() { reg.misbehave.Store(nil); close(stop) })
}

func isManifest(req *http.Request) bool { return strings.Contains(req.URL.Path, "/manifests/") }
func isBlob(req *http.Request) bool {
	return req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/")
}
func isReferrers(req *http.Request) bool { return strings.Contains(req.URL.Path, "/referrers/") }

// TestStalledRegistry: a registry that accepts the request and never
// answers, or sends a blob a byte at a time, fails the pull at the
// operation's timeout with ErrTimeout; without the timeout it would hang.
func TestStalledRegistry(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		match func(*http.Request) bool
		serve func(reg *testRegistry) func(http.ResponseWriter, *http.Request, <-chan struct{})
	}{
		{"never answers", isManifest, func(*testRegistry) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
			return func(_ http.ResponseWriter, req *http.Request, stop <-chan struct{}) {
				select {
				case <-req.Context().Done():
				case <-stop:
				}
			}
		}},
		{"trickles the module at a byte per 100ms", isBlob, func(reg *testRegistry) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
			return func(w http.ResponseWriter, req *http.Request, stop <-chan struct{}) {
				rec := httptest.NewRecorder()
				reg.inner.ServeHTTP(rec, req)
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				for _, b := range rec.Body.Bytes() {
					select {
					case <-req.Context().Done():
						return
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					_, _ = w.Write([]byte{b})
					w.(http.Flusher).Flush()
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newRegistry(t, false)
			o := reg.options()
			wasm := wasmBytes(4000, 1)
			_, err := oci.Push(ctx, reg.ref("s/m:v1"), wasm, oci.ModuleConfig{}, o)
			require.NoError(t, err)
			misbehave(t, reg, tc.match, tc.serve(reg))
			o.Timeout = time.Second
			start := time.Now()
			_, err = within(t, "a pull from a stalled registry", func() (*oci.Artifact, error) {
				return oci.Pull(ctx, reg.ref("s/m:v1"), o)
			})
			t.Logf("%s: the pull failed after %s: %v", tc.name, time.Since(start), err)
			require.ErrorIs(t, err, oci.ErrTimeout)
			require.ErrorContains(t, err, "did not answer, or not all of it, within 1s")
		})
	}
}

// TestEndlessReferrers: a registry that lists a module's referrers as
// empty page after empty page is read for maxReferrerPages pages, then the
// module is refused as unsigned; without the bound the listing would go on
// until the pull's timeout (here the default, two minutes).
func TestEndlessReferrers(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, false)
	o := reg.options()
	_, pub := newKey(t, t.TempDir(), "k")
	pinned, err := oci.Push(ctx, reg.ref("r/m:v1"), wasmBytes(10, 1), oci.ModuleConfig{}, o)
	require.NoError(t, err)
	var pages atomic.Int64
	misbehave(t, reg, isReferrers, func(w http.ResponseWriter, req *http.Request, _ <-chan struct{}) {
		n := pages.Add(1)
		w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
		w.Header().Set("Link", fmt.Sprintf(`<%s?last=%d>; rel="next"`, req.URL.Path, n))
		_, _ = w.Write([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`))
	})
	v, err := oci.LoadVerifier(pub)
	require.NoError(t, err)
	o.Verifier = v
	_, err = within(t, "a pull whose referrers never end", func() (*oci.Artifact, error) { return oci.Pull(ctx, pinned, o) })
	require.ErrorIs(t, err, oci.ErrUnsigned)
	t.Logf("referrer pages read: %d", pages.Load())
	require.LessOrEqual(t, pages.Load(), int64(8))
}

// TestHugeManifest: a manifest the registry says is larger than a
// module's takes is refused before it is read, and one streamed without a
// length is read no further than its described size.
func TestHugeManifest(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, false)
	o := reg.options()
	_, err := oci.Push(ctx, reg.ref("h/m:v1"), wasmBytes(10, 1), oci.ModuleConfig{}, o)
	require.NoError(t, err)
	var sent atomic.Int64
	misbehave(t, reg, isManifest, func(w http.ResponseWriter, req *http.Request, stop <-chan struct{}) {
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Content-Length", fmt.Sprint(int64(1)<<30))
		w.WriteHeader(http.StatusOK)
		chunk := make([]byte, 64<<10)
		for i := 0; i < 1<<14; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			sent.Add(int64(len(chunk)))
			select {
			case <-stop:
				return
			default:
			}
		}
	})
	_, err = within(t, "a pull of a 1 GiB manifest", func() (*oci.Artifact, error) { return oci.Pull(ctx, reg.ref("h/m:v1"), o) })
	require.ErrorIs(t, err, oci.ErrTooLarge)
	t.Logf("the registry wrote %d bytes of a 1 GiB manifest before the client closed: %v", sent.Load(), err)
}

// TestCacheEntries: a cache entry that is a symlink (to /dev/zero), a FIFO,
// a file larger than the module limit, or a directory is refused without
// being read, removed and fetched again; with the registry gone the pull
// fails and says why.
func TestCacheEntries(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, path string)
		want  string
	}{
		{"symlink to /dev/zero", func(t *testing.T, path string) { require.NoError(t, os.Symlink("/dev/zero", path)) }, "is a symbolic link"},
		{"FIFO", func(t *testing.T, path string) { require.NoError(t, syscall.Mkfifo(path, 0o644)) }, "named pipe (FIFO)"},
		{"3 GiB file", func(t *testing.T, path string) {
			f, err := os.Create(path)
			require.NoError(t, err)
			require.NoError(t, f.Truncate(3<<30)) // sparse: no disk used
			require.NoError(t, f.Close())
		}, "more than 4KiB"},
		{"directory", func(t *testing.T, path string) { require.NoError(t, os.Mkdir(path, 0o755)) }, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newRegistry(t, false)
			o := reg.options()
			o.CacheDir, o.MaxSize = t.TempDir(), 4096
			var log strings.Builder
			o.Logger = textLogger(&log)
			wasm := wasmBytes(100, 9)
			pinned, err := oci.Push(ctx, reg.ref("c/m:v1"), wasm, oci.ModuleConfig{}, o)
			require.NoError(t, err)
			_, err = oci.Pull(ctx, pinned, o)
			require.NoError(t, err)
			path := filepath.Join(o.CacheDir, "blobs", "sha256", sha(wasm))
			replace := func() {
				require.NoError(t, os.Remove(path))
				tc.plant(t, path)
			}

			replace()
			before := reg.blobGets.Load()
			a, err := within(t, "a pull over a bad cache entry", func() (*oci.Artifact, error) { return oci.Pull(ctx, pinned, o) })
			require.NoError(t, err)
			require.Equal(t, wasm, a.Wasm)
			require.Equal(t, before+1, reg.blobGets.Load(), "fetched again")
			require.Contains(t, log.String(), tc.want)
			st, err := os.Lstat(path)
			require.NoError(t, err)
			require.True(t, st.Mode().IsRegular(), "the cache holds the module again")

			replace()
			reg.srv.Close()
			_, err = within(t, "a pull over a bad cache entry with the registry gone", func() (*oci.Artifact, error) { return oci.Pull(ctx, pinned, o) })
			require.ErrorIs(t, err, oci.ErrCache)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
