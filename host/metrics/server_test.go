package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/metrics"
)

// Profiles are served only when asked for.
func TestServeProfiles(t *testing.T) {
	for _, tc := range []struct {
		name     string
		profiles bool
		want     int
	}{
		{"off by default", false, http.StatusNotFound},
		{"on when asked", true, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := metrics.Listen("127.0.0.1:0", metrics.New(), &metrics.Health{}, metrics.NewReadiness(""))
			require.NoError(t, err)
			if tc.profiles {
				srv.ServeProfiles()
			}
			go func() { _ = srv.Serve() }()
			t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
			resp, err := http.Get("http://" + srv.Addr() + "/debug/pprof/heap?debug=1")
			require.NoError(t, err)
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			require.Equal(t, tc.want, resp.StatusCode)
		})
	}
}

func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// The probe server answers /healthz from every check, naming the ones that
// fail, and /readyz from the readiness, and nothing else; the metrics server
// answers both the same way.
func TestProbes(t *testing.T) {
	health, ready := &metrics.Health{}, metrics.NewReadiness("caches syncing")
	var leaderErr error
	health.Add("ping", func(*http.Request) error { return nil })
	health.Add("leader-election", func(*http.Request) error { return leaderErr })
	probes, err := metrics.ListenProbes("127.0.0.1:0", health, ready)
	require.NoError(t, err)
	srv, err := metrics.Listen("127.0.0.1:0", metrics.New(), health, ready)
	require.NoError(t, err)
	for _, s := range []*metrics.Server{probes, srv} {
		go func() { _ = s.Serve() }()
		t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	}
	code, _ := get(t, probes.Addr(), "/metrics")
	require.Equal(t, http.StatusNotFound, code, "the probe port serves the probes alone")
	code, _ = get(t, srv.Addr(), "/metrics")
	require.Equal(t, http.StatusOK, code)

	for _, addr := range []string{probes.Addr(), srv.Addr()} {
		code, body := get(t, addr, "/healthz")
		require.Equal(t, http.StatusOK, code, body)
		code, body = get(t, addr, "/readyz")
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Contains(t, body, "caches syncing")
	}
	leaderErr = errors.New("failed election to renew leadership on lease kubeplug")
	ready.Ready()
	for _, addr := range []string{probes.Addr(), srv.Addr()} {
		code, body := get(t, addr, "/healthz")
		require.Equal(t, http.StatusInternalServerError, code)
		require.Contains(t, body, "leader-election: failed election to renew")
		require.NotContains(t, body, "ping")
		code, _ = get(t, addr, "/readyz")
		require.Equal(t, http.StatusOK, code)
	}
}

// A note shows in /readyz's answer without changing its code, ready or
// not, and goes when cleared.
func TestReadinessNotes(t *testing.T) {
	ready := metrics.NewReadiness("caches syncing")
	probes, err := metrics.ListenProbes("127.0.0.1:0", &metrics.Health{}, ready)
	require.NoError(t, err)
	go func() { _ = probes.Serve() }()
	t.Cleanup(func() { _ = probes.Shutdown(context.Background()) })

	ready.Note(`csi driver "b.csi.example.com"`, "GetPluginInfo at /run/csi/b.sock: connection refused; probing again")
	ready.Note(`csi driver "a.csi.example.com"`, "wrong driver")
	code, body := get(t, probes.Addr(), "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "not ready: caches syncing\n"+
		"warning: csi driver \"a.csi.example.com\": wrong driver\n"+
		"warning: csi driver \"b.csi.example.com\": GetPluginInfo at /run/csi/b.sock: connection refused; probing again\n", body)

	ready.Ready()
	code, body = get(t, probes.Addr(), "/readyz")
	require.Equal(t, http.StatusOK, code, "a note does not make the host unready")
	require.Equal(t, "ok\n"+
		"warning: csi driver \"a.csi.example.com\": wrong driver\n"+
		"warning: csi driver \"b.csi.example.com\": GetPluginInfo at /run/csi/b.sock: connection refused; probing again\n", body)

	ready.Note(`csi driver "a.csi.example.com"`, "")
	ready.Note(`csi driver "b.csi.example.com"`, "")
	code, body = get(t, probes.Addr(), "/readyz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)
	ready.NotReady("loading modules")
	_, body = get(t, probes.Addr(), "/readyz")
	require.Equal(t, "not ready: loading modules\n", body)

	ready.Note("long", strings.Repeat("x", 5000))
	require.Len(t, ready.Notes()[0], len("long: ")+1024, "a note's detail is cut to 1 KiB")
	ready.Note("long", "")

	ready.Ready()
	ready.Note(`csi driver "a.csi.example.com"`, "rpc error: code = Unavailable desc = down\nok\r\n")
	_, body = get(t, probes.Addr(), "/readyz")
	require.Equal(t, "ok\nwarning: csi driver \"a.csi.example.com\": rpc error: code = Unavailable desc = down ok  \n", body,
		"what a driver says stays on its line")
}

// kubeplug_ready follows the readiness: 1 while /readyz answers 200.
func TestWatchReadiness(t *testing.T) {
	m := metrics.New()
	ready := metrics.NewReadiness("caches syncing")
	m.WatchReadiness(ready)
	v, ok := sample(t, m.Registry, "kubeplug_ready", nil)
	require.True(t, ok)
	require.Zero(t, v)
	ready.Note("csi driver", "does not answer")
	ready.Ready()
	v, _ = sample(t, m.Registry, "kubeplug_ready", nil)
	require.Equal(t, 1.0, v, "a note leaves the host ready")
}
