package app

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/bench/workload"
	"github.com/kubeplug/kubeplug/host/oci"
)

// stallingRegistry is go-containerregistry's registry on loopback that,
// while stall is set, takes manifest requests and does not answer them
// until the client gives up or release is closed.
type stallingRegistry struct {
	host    string
	stall   atomic.Bool
	stalled chan struct{} // a request is being held
	release chan struct{}
}

func newStallingRegistry(t *testing.T) *stallingRegistry {
	t.Helper()
	s := &stallingRegistry{stalled: make(chan struct{}, 64), release: make(chan struct{})}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if s.stall.Load() && strings.Contains(req.URL.Path, "/manifests/") {
			s.stalled <- struct{}{}
			select {
			case <-req.Context().Done():
			case <-s.release:
			}
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
	})
	s.host = strings.TrimPrefix(srv.URL, "http://")
	return s
}

// returns fails t unless f returns within a minute: a guard against a
// wedged call, not a measurement.
func returns(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s did not return: it waits for the stalled registry", what)
	}
}

// TestReloadStalledRegistry: a registry that stalls holds up only the
// module whose image it serves. A reload while its pull hangs applies a
// changed module file at once and returns; the next reload does too; the
// pull ends at its timeout, is counted as a failed swap, and the image's
// module keeps serving the generation it had.
func TestReloadStalledRegistry(t *testing.T) {
	ctx := context.Background()
	reg := newStallingRegistry(t)
	wasm := workload.Guest(t, "examples/warnretain")
	ref := reg.host + "/policies/img:stable"
	_, err := oci.Push(ctx, ref, variant(wasm, 1), oci.ModuleConfig{}, oci.Options{PlainHTTP: true})
	require.NoError(t, err)

	dir := t.TempDir()
	mod := filepath.Join(dir, "warn.wasm")
	require.NoError(t, os.WriteFile(mod, wasm, 0o644))
	yaml := fmt.Sprintf("modules:\n- path: %s\n  name: warn\n%s- image: %s\n  name: img\n  plainHTTP: true\n%s",
		mod, allow["examples/warnretain"], ref, allow["examples/warnretain"])
	h := newTestHost(t, yaml, set("default", "web"))
	require.True(t, hasSeries(t, h.m, "warn", "1"))
	require.True(t, hasSeries(t, h.m, "img", "1"))

	// The registry now holds every manifest request; the pull's own
	// timeout is far away, so only the pull's running on its own lets the
	// reloads return.
	setFetch(h, oci.FetchOptions{Timeout: time.Hour})
	reg.stall.Store(true)
	require.NoError(t, os.WriteFile(mod, variant(wasm, 2), 0o644))
	returns(t, "a reload while the registry stalls", func() { h.r.Reload("test: module file changed") })
	<-reg.stalled
	require.True(t, hasSeries(t, h.m, "warn", "2"), "the changed module file is swapped in while the image's pull hangs")
	require.NoError(t, os.WriteFile(mod, variant(wasm, 3), 0o644))
	returns(t, "a second reload while the registry stalls", func() { h.r.Reload("test: SIGHUP") })
	<-reg.stalled
	require.True(t, hasSeries(t, h.m, "warn", "3"))
	require.True(t, hasSeries(t, h.m, "img", "1"), "the image's module serves on")

	// The next reload's pull has a timeout it reaches: the pull fails,
	// is counted, and the old module keeps serving.
	setFetch(h, oci.FetchOptions{Timeout: 200 * time.Millisecond})
	returns(t, "a reload while the registry stalls", func() { h.r.Reload("test: SIGHUP") })
	returns(t, "a pull from a stalled registry", h.r.pulling.Wait)
	require.Equal(t, 1.0, testutil.ToFloat64(h.m.ModuleSwaps.WithLabelValues("img", "failed")))
	require.True(t, hasSeries(t, h.m, "img", "1"))
	require.NotNil(t, h.r.fleet.get("img"))

	// With the registry back, the next reload pulls the moved tag.
	reg.stall.Store(false)
	_, err = oci.Push(ctx, ref, variant(wasm, 4), oci.ModuleConfig{}, oci.Options{PlainHTTP: true})
	require.NoError(t, err)
	h.r.Reload("test: SIGHUP")
	returns(t, "a pull from a registry that answers", h.r.pulling.Wait)
	require.True(t, hasSeries(t, h.m, "img", "2"))
	require.Equal(t, 1.0, testutil.ToFloat64(h.m.ModuleSwaps.WithLabelValues("img", "success")))
}

// setFetch sets how h's reloads pull images from now on.
func setFetch(h *testHost, fo oci.FetchOptions) {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	h.r.fetch = fo
}
