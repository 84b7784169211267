package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/kubeplug/kubeplug/host/metrics"
)

// LeaderHealthTimeout is how long past its renew deadline a leader may go
// without renewing the Lease before /healthz fails (client-go's
// leaderelection.HealthzAdaptor): a leader that can neither renew nor give
// up is wedged, and a restart lets another replica lead. kube-controller-
// manager uses the same 20 seconds.
const LeaderHealthTimeout = 20 * time.Second

// ReloadWedgedAfter is how long one reload may run before /healthz fails.
// A reload reads, compiles and checks every changed module and drains the
// controllers it replaces: seconds, and at most a registry timeout per image
// and a reconcileTimeout per drained worker. One that runs for ten minutes is
// stuck, and the host with it, since every later change queues behind it.
const ReloadWedgedAfter = 10 * time.Minute

// reloadHealth is the reload loop's heartbeat, for /healthz: the time the
// reload in progress began, and whether the loop that waits for changes
// (watch) has ended while the host runs. Its zero value is healthy.
type reloadHealth struct {
	busySince atomic.Int64 // unix nanoseconds; 0 while no reload runs
	ended     atomic.Bool
}

// begin marks a reload as started at now; the func it returns marks it done.
func (h *reloadHealth) begin(now time.Time) func() {
	h.busySince.Store(now.UnixNano())
	return func() { h.busySince.Store(0) }
}

// check fails when the loop ended, or a reload has run longer than bound
// at now.
func (h *reloadHealth) check(now time.Time, bound time.Duration) error {
	if h.ended.Load() {
		return fmt.Errorf("the reload loop has ended: the host no longer follows its configuration and modules")
	}
	if since := h.busySince.Load(); since != 0 {
		if d := now.Sub(time.Unix(0, since)); d > bound {
			return fmt.Errorf("one reload has run for %s, more than %s: wedged", d.Truncate(time.Second), bound)
		}
	}
	return nil
}

// serveProbes serves /healthz and /readyz on addr until ctx ends (see
// Options.ProbeAddr); empty or "0" serves nothing. The func it returns stops
// the server.
func serveProbes(ctx context.Context, addr string, health *metrics.Health, ready *metrics.Readiness, log *slog.Logger) (func(), error) {
	if disabled(addr) {
		return func() {}, nil
	}
	srv, err := metrics.ListenProbes(addr, health, ready)
	if err != nil {
		return nil, err
	}
	go func() {
		if err := srv.Serve(); err != nil {
			log.Error("health probe server", "err", err)
		}
	}()
	log.Info("serving health probes", "addr", srv.Addr())
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}

// disabled reports whether a bind address turns its server off, as
// controller-runtime's "0" does.
func disabled(addr string) bool { return addr == "" || addr == "0" }

// healthCheck adapts a check of the clock to metrics.Health.
func healthCheck(f func(now time.Time) error) func(*http.Request) error {
	return func(*http.Request) error { return f(time.Now()) }
}
