package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Readiness is what /readyz reports: ready once every check has passed.
type Readiness struct {
	mu     sync.Mutex
	reason string
}

// NewReadiness starts not ready, for reason.
func NewReadiness(reason string) *Readiness { return &Readiness{reason: reason} }

// NotReady records why the host is not ready.
func (r *Readiness) NotReady(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reason = reason
}

// Ready marks the host ready.
func (r *Readiness) Ready() { r.NotReady("") }

// Reason is "" when ready, else why not.
func (r *Readiness) Reason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason
}

// Server serves /metrics, /healthz and /readyz.
type Server struct {
	srv *http.Server
	ln  net.Listener
	mux *http.ServeMux
}

// Listen binds addr (host:port; port 0 picks one) and returns a server
// ready to Serve.
func Listen(addr string, m *Metrics, ready *Readiness) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if reason := ready.Reason(); reason != "" {
			http.Error(w, "not ready: "+reason, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, mux: mux}, nil
}

// ServeProfiles adds Go's runtime profiles (net/http/pprof) under
// /debug/pprof/. They are off unless asked for: a profile shows what the
// host holds in memory, which the metrics port need not give away.
func (s *Server) ServeProfiles() {
	s.mux.HandleFunc("/debug/pprof/", pprof.Index)
	s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve serves until Shutdown.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops the server, letting requests in flight finish.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }
