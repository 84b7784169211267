package admission

import (
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kubeplug/kubeplug/abi"
)

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
	// MaxInFlightBytes bounds the memory of all reviews in flight at once:
	// their bodies, what the bodies decode to, the modules' inputs, their
	// patches and answers (budget.go). A request is charged its
	// Content-Length (or MaxBodyBytes when it sends none) before its body is
	// read and the rest before each is made; one that does not fit is
	// answered 429 Too Many Requests, or by the failure policy once it is
	// being reviewed. A review keeps its charge until its work has ended,
	// even past its answer.
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
// rest of the review. 64 MiB in flight holds one review of the largest
// size with all it decodes to, or hundreds of ordinary ones (an ordinary
// claim's review is charged about 40 KiB in all); it is an eighth of the
// chart's memory limit.
func DefaultServerLimits() ServerLimits {
	return ServerLimits{
		MaxConnections:    256,
		MaxBodyBytes:      7 << 20,
		MaxInFlightBytes:  64 << 20,
		MaxHeaderBytes:    64 << 10,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      maxWebhookTimeout + 5*time.Second,
		IdleTimeout:       60 * time.Second,
	}
}

// What decoding a review is charged (decodeCost): per byte of its body, per
// value, and per object that is an array's element. Each is an upper bound
// of what encoding/json allocates, garbage included, decoding reviews into
// k8s.io/api's types and projecting them, measured on the most costly shape
// of each (RATIONALE.md, "Why is a review charged by its values, not only
// its bytes?"): a string's bytes are copied about four times (read, the
// object's raw copy, the decoded field, the module's JSON); a value is a
// map entry, an interface or a slice element; and "{}" in a slice of
// containers or claim templates is a struct of a kilobyte or more, in a
// slice grown by doubling.
const (
	decodeByteCost          = 4
	decodeValueCost         = 256
	decodeElementObjectCost = 4 << 10
)

// decodeCost is what a review of n bytes with sh's shape is charged for
// being decoded.
func (sh shape) decodeCost(n int) int64 {
	return decodeByteCost*int64(n) + decodeValueCost*sh.values + decodeElementObjectCost*sh.elementObjects
}

// inputCost is what the module's input is charged: its encoded size, twice
// (the runtime encodes it into a buffer of the instance's, and the
// decoded state of the StatefulSet it holds is about as large).
func inputCost(in *abi.AdmitRequest) int64 { return 2 * int64(in.Msgsize()) }

// What applying a patch is charged (patchCost): per byte of the largest
// document it can build (largestDocument), per operation, and per unit of
// the work of its operations on arrays (each × that document).
// json-patch decodes the document a level at a time as the paths reach in,
// keeps each level's bytes, copies values and encodes the result; each
// operation on an array makes a new slice of it, garbage at once but
// garbage all the same; and the answer carries the patch again,
// base64-encoded. Measured as decodeCost's constants are; a patch whose
// charge is more than the whole budget is refused, so the work on arrays a
// review can cause is a quarter of MaxPatchWork at most with the default
// limits.
const (
	patchByteCost = 16
	patchOpCost   = 4 << 10
	patchWorkCost = 4
)

// patchCost is what applying ops to req's object, and answering with them,
// is charged.
func patchCost(req *admissionv1.AdmissionRequest, ops []abi.PatchOperation) int64 {
	patch := int64(0)
	copies, onArrays := 0, int64(0)
	for _, op := range ops {
		// An operation's JSON: its fields, their names and punctuation.
		patch += int64(len(op.Op)+len(op.Path)+len(op.From)+len(op.Value)) + 32
		if op.Op == abi.PatchCopy {
			copies++
		}
		if arrayElement(op.Path) || arrayElement(op.From) {
			onArrays++
		}
	}
	doc := largestDocument(int64(len(req.Object.Raw)), patch, copies)
	return patchByteCost*doc + patchOpCost*int64(len(ops)) + patchWorkCost*onArrays*doc + 2*patch
}

// arrayElement reports whether a JSON Pointer may name an array's element:
// its last token is an index or "-" (or a map key that looks like one).
func arrayElement(path string) bool {
	i := strings.LastIndexByte(path, '/')
	if i < 0 || i == len(path)-1 {
		return false
	}
	last := path[i+1:]
	return last == "-" || strings.Trim(last, "0123456789") == ""
}
