package admission

import "time"

// The patch budget: what a module's patch may do, whatever its mutate
// grant. kube-apiserver applies the patch again with its own bounds (10,000
// operations for a JSON patch, 3 MiB copied, 3 MiB of request body); these
// match or are tighter, and are checked before the host applies the patch,
// while and after (applyPatch).
const (
	// MaxPatchOperations bounds a patch's operations: kube-apiserver's
	// maxJSONPatchOperations. The runtime's maxActions (4,096 by default)
	// bounds the module's answer first.
	MaxPatchOperations = 10000
	// MaxPatchBytes bounds the encoded patch: kube-apiserver's
	// MaxRequestBodyBytes, the most a patch request may carry. The
	// runtime's maxOutput (1 MiB by default) bounds the answer first.
	MaxPatchBytes = 3 << 20
	// MaxPatchCopyBytes bounds the bytes all copy operations of one patch
	// copy, counted as they are copied: kube-apiserver's
	// JSONPatchMaxCopyBytes.
	MaxPatchCopyBytes = 3 << 20
	// MaxPatchedObjectBytes bounds the object after the patch: twice etcd's
	// default request limit of 1.5 MiB, as kube-apiserver bounds a request.
	MaxPatchedObjectBytes = 3 << 20
	// MaxPatchWork bounds operations × the largest document the patch can
	// build (the object, the patch's bytes, and MaxPatchCopyBytes when it
	// has a copy): each operation's work (a path walked, an array shifted,
	// a value compared) is linear in the document at most. 64 Mi of it
	// is under a second of one core at the worst found (removals from the
	// front of a long array); RATIONALE.md has the measurements.
	MaxPatchWork = 64 << 20
)

// ServerLimits bound what the webhook server holds for its clients: time,
// connections and bytes. Anyone who can reach the port is a client.
type ServerLimits struct {
	// MaxConnections caps open connections (netutil.LimitListener): the
	// next one waits in the kernel's backlog until one closes.
	MaxConnections int
	// MaxBodyBytes bounds one request body (http.MaxBytesReader).
	MaxBodyBytes int64
	// MaxInFlightBytes bounds the bytes of all request bodies being read or
	// reviewed at once; a request is charged its Content-Length (or
	// MaxBodyBytes when it sends none) before its body is read, and one that
	// does not fit is answered 429 Too Many Requests.
	MaxInFlightBytes int64
	// MaxHeaderBytes bounds a request's header (http.Server.MaxHeaderBytes).
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds the TLS handshake and a request's header.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from its header read to its answer
	// written; each answer is bounded further by the API server's timeout.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection with no request.
	IdleTimeout time.Duration
}

// maxWebhookTimeout is the largest timeoutSeconds the API server accepts
// for a webhook.
const maxWebhookTimeout = 30 * time.Second

// DefaultServerLimits returns the webhook server's limits.
//
// A review holds the object and, for an update, the old object: each at
// most kube-apiserver's 3 MiB request body, so 7 MiB leaves 1 MiB for the
// rest of the review. 32 MiB in flight holds four reviews of the largest
// size or thousands of ordinary ones (a few KiB each).
func DefaultServerLimits() ServerLimits {
	return ServerLimits{
		MaxConnections:    256,
		MaxBodyBytes:      7 << 20,
		MaxInFlightBytes:  32 << 20,
		MaxHeaderBytes:    64 << 10,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      maxWebhookTimeout + 5*time.Second,
		IdleTimeout:       60 * time.Second,
	}
}
