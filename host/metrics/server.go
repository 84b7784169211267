package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Readiness is what /readyz reports: ready once every check has passed,
// with notes of what the host works around and an operator should see.
type Readiness struct {
	mu     sync.Mutex
	reason string
	notes  map[string]string
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

// maxNote bounds a note's detail, which may quote what a driver answered.
const maxNote = 1024

// Note shows detail under name in /readyz's answer, without making the
// host not ready: something it works around that an operator should see,
// such as a CSI driver that does not answer. An empty detail removes the
// note. Callers keep the names few (one per configured driver). The detail
// may quote what a driver said: it is kept to one line of at most 1 KiB, so
// that it cannot pass for another line of the answer.
func (r *Readiness) Note(name, detail string) {
	detail = strings.Map(func(c rune) rune {
		if unicode.IsControl(c) {
			return ' '
		}
		return c
	}, detail)
	r.mu.Lock()
	defer r.mu.Unlock()
	if detail == "" {
		delete(r.notes, name)
		return
	}
	if r.notes == nil {
		r.notes = map[string]string{}
	}
	r.notes[name] = Clip(detail, maxNote)
}

// Notes returns the notes as /readyz shows them, "name: detail", sorted.
func (r *Readiness) Notes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.notes))
	for name, detail := range r.notes {
		out = append(out, name+": "+detail)
	}
	slices.Sort(out)
	return out
}

// answer is /readyz's body after its first line: each note on a line of
// its own.
func (r *Readiness) answer() string {
	var b strings.Builder
	for _, n := range r.Notes() {
		b.WriteString("warning: ")
		b.WriteString(n)
		b.WriteByte('\n')
	}
	return b.String()
}

// Health is what /healthz reports: healthy while every check passes. A check
// has the shape of controller-runtime's healthz.Checker and of client-go's
// leaderelection.HealthzAdaptor.Check, so either plugs in as it is.
type Health struct {
	mu     sync.Mutex
	checks []namedCheck
}

type namedCheck struct {
	name  string
	check func(*http.Request) error
}

// Add adds a check named name; /healthz fails while it returns an error.
func (h *Health) Add(name string, check func(*http.Request) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checks = append(h.checks, namedCheck{name, check})
}

// Check runs every check and returns the failures, each named, or nil.
func (h *Health) Check(r *http.Request) error {
	h.mu.Lock()
	checks := slices.Clone(h.checks)
	h.mu.Unlock()
	var errs []error
	for _, c := range checks {
		if err := c.check(r); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}

// Server serves /metrics, /healthz and /readyz, or only the last two.
type Server struct {
	srv *http.Server
	ln  net.Listener
	mux *http.ServeMux
}

// Listen binds addr (host:port; port 0 picks one) and returns a server of
// /metrics, /healthz and /readyz ready to Serve.
func Listen(addr string, m *Metrics, health *Health, ready *Readiness) (*Server, error) {
	s, err := listen("metrics", addr, health, ready)
	if err != nil {
		return nil, err
	}
	s.mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	return s, nil
}

// ListenProbes binds addr and returns a server of /healthz and /readyz
// alone, for the kubelet's liveness and readiness probes: a port of their
// own, so that a probe never competes with a scrape and the metrics port can
// be closed to everything but the monitoring.
func ListenProbes(addr string, health *Health, ready *Readiness) (*Server, error) {
	return listen("health probes", addr, health, ready)
}

func listen(what, addr string, health *Health, ready *Readiness) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s: %w", what, addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := health.Check(r); err != nil {
			http.Error(w, "unhealthy: "+err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if reason := ready.Reason(); reason != "" {
			// http.Error ends the body with a newline of its own.
			http.Error(w, strings.TrimSuffix("not ready: "+reason+"\n"+ready.answer(), "\n"), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok\n"+ready.answer())
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
