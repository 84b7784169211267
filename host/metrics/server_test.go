package metrics_test

import (
	"context"
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
			srv, err := metrics.Listen("127.0.0.1:0", metrics.New(), metrics.NewReadiness(""))
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
