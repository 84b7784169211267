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

	"golang.org/x/net/netutil"
	admissionv1 "k8s.io/api/admission/v1"
)

// PathPrefix starts the path of every module's webhook: /admit/<module>.
const PathPrefix = "/admit/"

// MaxReviewBytes bounds an AdmissionReview's body. kube-apiserver accepts
// at most 3 MiB of request body (twice etcd's default 1.5 MiB request), and
// a review holds the object and, for an update, the old one: 2 × 3 MiB, and
// 1 MiB for the rest of the review.
const MaxReviewBytes = 7 << 20

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
//
// The answer is due by the API server's timeout counted from the request's
// arrival, not from the end of its body: the review's deadline (callBudget)
// is set here, before the body is read.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	name, ok := strings.CutPrefix(r.URL.Path, PathPrefix)
	mod := (*h.modules.Load())[name]
	if !ok || mod == nil {
		http.Error(w, fmt.Sprintf("no admitting module %q here: the path is %s<module entry name>", name, PathPrefix), http.StatusNotFound)
		return
	}
	timeout := apiTimeout(r)
	if timeout <= 0 {
		timeout = mod.timeout()
	}
	// An answer after the API server's timeout reaches no one.
	_ = http.NewResponseController(w).SetWriteDeadline(arrival.Add(timeout))
	ctx, cancel := context.WithDeadline(r.Context(), arrival.Add(callBudget(timeout)))
	defer cancel()
	review, err := decodeReview(w, r, chargeOf(ctx))
	if err != nil {
		h.reviewer.logger().Warn("admission request refused", "module", name, "err", err)
		http.Error(w, err.Error(), refusalCode(err))
		return
	}
	o := h.reviewer.Review(ctx, mod, review.Request, timeout)
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: o.Response}
	body, err := json.Marshal(&out)
	if err != nil {
		http.Error(w, fmt.Sprintf("encode AdmissionReview: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// refusalCode is the HTTP status of a request decodeReview refused.
func refusalCode(err error) int {
	var maxErr *http.MaxBytesError
	var budgetErr *errBudget
	switch {
	case errors.As(err, &maxErr):
		return http.StatusRequestEntityTooLarge
	case errors.As(err, &budgetErr) && budgetErr.neverFits:
		return http.StatusRequestEntityTooLarge
	case errors.As(err, &budgetErr):
		return http.StatusTooManyRequests
	}
	return http.StatusBadRequest
}

// decodeReview reads one AdmissionReview v1 with a request, of at most
// MaxReviewBytes, charging c what it decodes to before it is decoded
// (scanReview, decodeCost).
func decodeReview(w http.ResponseWriter, r *http.Request, c *charge) (*admissionv1.AdmissionReview, error) {
	if r.Method != http.MethodPost {
		return nil, fmt.Errorf("%w: method %s, want POST", ErrReview, r.Method)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return nil, fmt.Errorf("%w: content type %q, want application/json", ErrReview, ct)
	}
	if r.ContentLength > MaxReviewBytes {
		return nil, fmt.Errorf("%w: body of %d bytes, larger than %d bytes: %w", ErrReview, r.ContentLength, MaxReviewBytes,
			&http.MaxBytesError{Limit: MaxReviewBytes})
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxReviewBytes))
	if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
		return nil, fmt.Errorf("%w: body larger than %d bytes: %w", ErrReview, MaxReviewBytes, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read body: %v", ErrReview, err)
	}
	if !json.Valid(body) {
		// What json.Unmarshal says of it, which names the offset.
		var v struct{}
		return nil, fmt.Errorf("%w: %v", ErrReview, json.Unmarshal(body, &v))
	}
	sh := scanReview(body)
	if err := c.grow(sh.decodeCost(len(body)), "decoding the review"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReview, err)
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
// ?timeout=<duration>, zero when absent or unreadable, and at most the
// largest the API server accepts.
func apiTimeout(r *http.Request) time.Duration {
	d, err := time.ParseDuration(r.URL.Query().Get("timeout"))
	if err != nil || d <= 0 {
		return 0
	}
	return min(d, maxWebhookTimeout)
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
// (tls.crt, tls.key), reloaded when the files change, within lim.
//
// It serves HTTP/1.1 only: one request at a time per connection, so that
// MaxConnections bounds the requests in flight too, and none of HTTP/2's
// own ways to make a server work (streams reset as soon as opened, many
// streams per connection) applies; kube-apiserver calls webhooks over
// either.
func Listen(addr, certDir string, h http.Handler, log *slog.Logger, lim ServerLimits) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	certs, err := NewCertWatcher(certDir, log)
	if err != nil {
		return nil, err
	}
	return ListenTLS(addr, certs, h, log, lim)
}

// ListenTLS listens on addr with the serving certificate of certs, which
// the server closes when it shuts down.
func ListenTLS(addr string, certs CertSource, h http.Handler, log *slog.Logger, lim ServerLimits) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		certs.Close()
		return nil, fmt.Errorf("webhook server: listen on %s: %w", addr, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate, NextProtos: []string{"http/1.1"}}
	srv := &http.Server{
		Handler: &bounded{next: h, lim: lim, mem: newMemory(lim.MaxInFlightBytes), log: log},
		// Serve below is given a TLS listener, so the handshake runs in
		// the server's connection goroutine, under the smallest of the
		// read and write timeouts: ReadHeaderTimeout.
		TLSConfig:         cfg,
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	return &Server{srv: srv, ln: tls.NewListener(netutil.LimitListener(ln, lim.MaxConnections), cfg), certs: certs}, nil
}

// bounded charges each request its body's bytes against the memory the
// server may hold for requests at once before the body is read (budget.go),
// bounds the body, and gives the request's charge to the handler in its
// context, for what the review then holds.
type bounded struct {
	next http.Handler
	lim  ServerLimits
	mem  *memory
	log  *slog.Logger
}

func (b *bounded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > b.lim.MaxBodyBytes {
		http.Error(w, fmt.Sprintf("%v: body of %d bytes, more than the limit of %d", ErrReview, r.ContentLength, b.lim.MaxBodyBytes), http.StatusRequestEntityTooLarge)
		return
	}
	body := r.ContentLength
	if body < 0 {
		body = b.lim.MaxBodyBytes // unknown (chunked): the most it may be
	}
	c := &charge{mem: b.mem, refs: 1}
	defer c.release()
	if err := c.grow(body, "the request's body"); err != nil {
		b.log.Warn("admission request refused: the server holds its limit of memory for requests", "limit", b.lim.MaxInFlightBytes, "charge", body, "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("%v; the API server answers this request by the webhook's failure policy", err), http.StatusTooManyRequests)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, min(body, b.lim.MaxBodyBytes))
	b.next.ServeHTTP(w, r.WithContext(withCharge(r.Context(), c)))
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
