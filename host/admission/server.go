package admission

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// PathPrefix starts the path of every module's webhook: /admit/<module>.
const PathPrefix = "/admit/"

// maxReviewBytes bounds a request body. The API server's own limit on an
// object is 3 MiB (etcd's 1.5 MiB request limit, twice for object and old
// object, and some); a review holds two objects.
const maxReviewBytes = 7 << 20

// Handler serves AdmissionReview v1 requests at /admit/<module>.
type Handler struct {
	reviewer *Reviewer
	// modules maps a name to its module; replaced whole so that a host
	// that reloads its modules can swap it without a lock.
	modules atomic.Pointer[map[string]*Module]
}

// NewHandler returns a handler serving mods through r.
func NewHandler(r *Reviewer, mods []*Module) *Handler {
	h := &Handler{reviewer: r}
	h.SetModules(mods)
	return h
}

// SetModules replaces the modules served.
func (h *Handler) SetModules(mods []*Module) {
	m := make(map[string]*Module, len(mods))
	for _, mod := range mods {
		m[mod.Name] = mod
	}
	h.modules.Store(&m)
}

// ServeHTTP answers one AdmissionReview. A request that is not one (wrong
// method, content type, body) gets an HTTP error, which the API server
// treats as a failed call and answers by the webhook's failure policy.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, PathPrefix)
	mod := (*h.modules.Load())[name]
	if !ok || mod == nil {
		http.Error(w, fmt.Sprintf("no admitting module %q here: the path is %s<module entry name>", name, PathPrefix), http.StatusNotFound)
		return
	}
	review, err := decodeReview(r)
	if err != nil {
		h.reviewer.logger().Warn("admission request refused", "module", name, "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o := h.reviewer.Review(r.Context(), mod, review.Request, apiTimeout(r))
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: o.Response}
	body, err := json.Marshal(&out)
	if err != nil {
		http.Error(w, fmt.Sprintf("encode AdmissionReview: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// decodeReview reads one AdmissionReview v1 with a request.
func decodeReview(r *http.Request) (*admissionv1.AdmissionReview, error) {
	if r.Method != http.MethodPost {
		return nil, fmt.Errorf("%w: method %s, want POST", ErrReview, r.Method)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return nil, fmt.Errorf("%w: content type %q, want application/json", ErrReview, ct)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read body: %v", ErrReview, err)
	}
	if len(body) > maxReviewBytes {
		return nil, fmt.Errorf("%w: body larger than %d bytes", ErrReview, maxReviewBytes)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrReview, err)
	}
	if review.APIVersion != admissionv1.SchemeGroupVersion.String() || review.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("%w: %s %s, want admission.k8s.io/v1 AdmissionReview (admissionReviewVersions: [v1])", ErrReview, review.APIVersion, review.Kind)
	}
	if review.Request == nil {
		return nil, fmt.Errorf("%w: no request", ErrReview)
	}
	return &review, nil
}

// apiTimeout is the webhook timeout the API server appends to the URL as
// ?timeout=<duration>, zero when absent or unreadable.
func apiTimeout(r *http.Request) time.Duration {
	d, err := time.ParseDuration(r.URL.Query().Get("timeout"))
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// Server is the webhook's HTTPS server.
type Server struct {
	srv   *http.Server
	ln    net.Listener
	certs CertSource
}

// CertSource gives the webhook server its serving certificate for each
// handshake: a CertWatcher of a directory, or a certificate the host
// manages itself (host/webhookcert).
type CertSource interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// Close stops whatever keeps the certificate current.
	Close()
}

// Listen listens on addr with the serving certificate of certDir
// (tls.crt, tls.key), reloaded when the files change.
func Listen(addr, certDir string, h http.Handler, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	certs, err := NewCertWatcher(certDir, log)
	if err != nil {
		return nil, err
	}
	return ListenTLS(addr, certs, h, log)
}

// ListenTLS listens on addr with the serving certificate of certs, which
// the server closes when it shuts down.
func ListenTLS(addr string, certs CertSource, h http.Handler, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		certs.Close()
		return nil, fmt.Errorf("webhook server: listen on %s: %w", addr, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate}
	srv := &http.Server{
		Handler:           h,
		TLSConfig:         cfg,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	return &Server{srv: srv, ln: tls.NewListener(ln, cfg), certs: certs}, nil
}

// Addr is where the server listens.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve serves until Shutdown; it returns nil then.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("webhook server: %w", err)
	}
	return nil
}

// Shutdown stops the server, letting reviews in flight finish until ctx is
// done, and stops watching the certificate.
func (s *Server) Shutdown(ctx context.Context) error {
	defer s.certs.Close()
	return s.srv.Shutdown(ctx)
}
