package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
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
