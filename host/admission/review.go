package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// Reviewer answers admission requests for modules. Its fields are read
// only; it is safe for concurrent use when its Lister and Namespaces are.
type Reviewer struct {
	// Lister reads the host's caches for the related objects; nil gives
	// none.
	Lister snapshot.Lister
	// LiveStatefulSet, when set, reads from the API server a StatefulSet
	// that Lister has not got, for a request whose object names it (a
	// claim of its templates, a pod): kube-controller-manager creates a
	// set's claims and pods from its own informer, which can be ahead of
	// the host's, and a set deleted just after would otherwise never be
	// known to the module (liveSets). It answers NotFound for a set the
	// host would not watch (another shard's). At most maxLiveReads calls
	// a review, under the review's deadline; nil reads only Lister.
	LiveStatefulSet func(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error)
	// NamespaceLabels returns the labels of a namespace, nil when it is not
	// known; nil gives none.
	NamespaceLabels func(name string) (map[string]string, error)
	// Observe, when set, is told of every review (metrics).
	Observe func(module string, o *Outcome, took time.Duration)
	// Logger receives a debug record per review and a warning per failure;
	// nil discards.
	Logger *slog.Logger
	// Now is the clock given to modules; nil means time.Now.
	Now func() time.Time
	// Synced, when set, is closed once the caches Lister and
	// NamespaceLabels read have synced. A review that comes in before
	// waits for it within its deadline, and is answered by the failure
	// policy if the deadline comes first: a module is never shown caches
	// that are still filling, which would show it a set without its pods
	// or claims. nil: synced.
	Synced <-chan struct{}
}

// Outcome is how one review ended.
type Outcome struct {
	// Response is the answer for the API server, its UID set.
	Response *admissionv1.AdmissionResponse
	// Object is the object after the module's patch (as sent when there is
	// none); nil when the request was denied or has no object.
	Object []byte
	// Failure is why the failure policy answered; nil when the module did.
	Failure error
}

// Result names the outcome for metrics and logs: allowed, mutated, denied,
// or failed-open / failed-closed when the failure policy answered.
func (o *Outcome) Result() string {
	switch {
	case o.Failure != nil && o.Response.Allowed:
		return "failed-open"
	case o.Failure != nil:
		return "failed-closed"
	case !o.Response.Allowed:
		return "denied"
	case o.Response.Patch != nil:
		return "mutated"
	}
	return "allowed"
}

// Review answers req for m: it checks req against the rules m registers,
// builds the module's input from req and the caches, calls the module,
// holds its patch to m.Granted and the patch budget and applies it to the
// object, holds the references the patched object gains to the host's
// owner-reference rule (checkOwners), and returns the answer; when any of
// that fails, the answer is m's failure policy's.
//
// All of it runs within apiTimeout (the API server's webhook timeout; zero
// means the module's configured one) less a margin (callBudget), or by
// ctx's deadline when it is earlier (the webhook server counts from the
// request's arrival). The review runs on a goroutine of its own and Review
// returns at the deadline whatever it is doing, with the failure policy's
// answer: a module call that overruns (a starved CPU, a guest between
// checkpoints) or a patch being applied are not waited for. They end on
// their own: the runtime ends the call, as its context is done, and the
// patch's work is bounded (MaxPatchWork).
func (r *Reviewer) Review(ctx context.Context, m *Module, req *admissionv1.AdmissionRequest, apiTimeout time.Duration) *Outcome {
	start := time.Now()
	if apiTimeout <= 0 {
		apiTimeout = m.timeout()
	}
	budget := callBudget(apiTimeout)
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	o := r.reviewBy(ctx, m, req, apiTimeout)
	o.Response.UID = req.UID
	if o.Failure != nil && o.Response.Allowed {
		o.Object = req.Object.Raw // allowed unchanged
	}
	took := time.Since(start)
	log := r.logger().With("module", m.Name, "uid", string(req.UID), "operation", string(req.Operation),
		"resource", req.Resource.Resource, "namespace", req.Namespace, "name", req.Name)
	if o.Failure != nil {
		log.Warn("admission failed: answered by the failure policy", "policy", m.failurePolicy(),
			"allowed", o.Response.Allowed, "err", o.Failure, "took", took)
	} else {
		log.Debug("admission reviewed", "result", o.Result(), "took", took)
	}
	if r.Observe != nil {
		r.Observe(m.Name, o, took)
	}
	return o
}

// reviewBy waits for the caches to sync (Synced), runs review on a
// goroutine and returns its outcome, or the failure policy's once ctx is
// done.
func (r *Reviewer) reviewBy(ctx context.Context, m *Module, req *admissionv1.AdmissionRequest, apiTimeout time.Duration) *Outcome {
	if r.Synced != nil {
		select {
		case <-r.Synced:
		case <-ctx.Done():
			return m.failed(fmt.Errorf("%w: the host's caches were still syncing %v into the API server's %v timeout (the rest is kept for the answer to reach it): %w",
				ErrRequest, callBudget(apiTimeout), apiTimeout, context.Cause(ctx)))
		}
	}
	done := make(chan *Outcome, 1) // the goroutine never blocks on it
	// The goroutine may outlive the answer (below); what it holds stays
	// charged until it returns.
	c := chargeOf(ctx)
	c.retain()
	go func() {
		defer c.release()
		defer func() {
			if p := recover(); p != nil {
				done <- m.failed(fmt.Errorf("%w: the review panicked: %v", ErrCall, p))
			}
		}()
		done <- r.review(ctx, m, req)
	}()
	select {
	case o := <-done:
		return o
	case <-ctx.Done():
		select {
		case o := <-done:
			return o // it finished as the deadline came
		default:
		}
		return m.failed(fmt.Errorf("%w: no answer within %v of the API server's %v timeout (the rest is kept for the answer to reach it): %w",
			ErrCall, callBudget(apiTimeout), apiTimeout, context.Cause(ctx)))
	}
}

func (r *Reviewer) review(ctx context.Context, m *Module, req *admissionv1.AdmissionRequest) *Outcome {
	if err := withheld(req); err != nil {
		return m.failed(fmt.Errorf("%w: %w", ErrRequest, err))
	}
	if err := m.registered(req); err != nil {
		return m.failed(fmt.Errorf("%w: %w", ErrRequest, err))
	}
	in, err := r.request(ctx, m, req)
	if err != nil {
		return m.failed(fmt.Errorf("%w: %w", ErrRequest, err))
	}
	// The encoded input, and the state of the StatefulSet read from the
	// caches, which a review of a few bytes can name.
	if err := chargeOf(ctx).grow(inputCost(in), "the module's input"); err != nil {
		return m.failed(fmt.Errorf("%w: %w", ErrBudget, err))
	}
	ans, err := m.Admitter.Admit(ctx, in)
	if err != nil {
		return m.failed(fmt.Errorf("%w: %w", ErrCall, err))
	}
	if ans == nil {
		return m.failed(fmt.Errorf("%w: the module gave no answer", ErrCall))
	}
	resp := &admissionv1.AdmissionResponse{Allowed: ans.Allowed, Warnings: ans.Warnings}
	if !ans.Allowed {
		if len(ans.Patch) > 0 {
			return m.failed(fmt.Errorf("%w: the module denied the request and patched it: a denial carries no patch", ErrPatch))
		}
		resp.Result = denial(ans)
		return &Outcome{Response: resp}
	}
	object := req.Object.Raw
	if len(ans.Patch) > 0 {
		if err := chargeOf(ctx).grow(patchCost(req, ans.Patch), "applying the module's patch"); err != nil {
			return m.failed(fmt.Errorf("%w: %w", ErrBudget, err))
		}
		patch, patched, err := m.applyPatch(req, ans.Patch)
		if err == nil {
			err = checkOwners(in.StatefulSet, req, patched)
		}
		if err != nil {
			return m.failed(fmt.Errorf("%w: %w", ErrPatch, err))
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType, object = patch, &pt, patched
	}
	return &Outcome{Response: resp, Object: object}
}

// denial is the Status of a module's denial: its message, reason and code,
// Forbidden and 403 by default, as the API server's own webhook denials.
func denial(ans *abi.AdmitResponse) *metav1.Status {
	code := ans.Code
	if code < 400 || code > 599 {
		code = http.StatusForbidden
	}
	reason := metav1.StatusReason(ans.Reason)
	if reason == "" {
		reason = metav1.StatusReasonForbidden
	}
	return &metav1.Status{Status: metav1.StatusFailure, Message: ans.Message, Reason: reason, Code: code}
}

// failed is the failure policy's answer, err being why it is given.
func (m *Module) failed(err error) *Outcome {
	if m.failurePolicy() == Ignore {
		return &Outcome{
			Response: &admissionv1.AdmissionResponse{
				Allowed:  true,
				Warnings: []string{fmt.Sprintf("kubeplug module %s failed and its failurePolicy Ignore allowed the request unchanged: %s", m.Name, oneLine(err))},
			},
			Failure: err,
		}
	}
	return &Outcome{
		Response: &admissionv1.AdmissionResponse{Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Message: fmt.Sprintf("kubeplug module %s failed and its failurePolicy Fail denies the request: %s", m.Name, oneLine(err)),
			Reason:  metav1.StatusReasonInternalError,
			Code:    http.StatusInternalServerError,
		}},
		Failure: err,
	}
}

// oneLine cuts an error to its first line and 1 KiB: what the user sees of
// a module's failure, the rest being in the host's log.
func oneLine(err error) string {
	s := err.Error()
	for i := range len(s) {
		if s[i] == '\n' {
			s = s[:i]
			break
		}
	}
	if len(s) > 1024 {
		s = s[:1024] + "..."
	}
	return s
}

func (r *Reviewer) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

func (r *Reviewer) now() string {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	return now().UTC().Format(time.RFC3339Nano)
}

// FailureReason names why the failure policy answered, for metrics:
// request, call, patch or budget; "" when the module answered.
func (o *Outcome) FailureReason() string {
	switch {
	case o.Failure == nil:
		return ""
	case errors.Is(o.Failure, ErrPatch):
		return "patch"
	case errors.Is(o.Failure, ErrRequest):
		return "request"
	case errors.Is(o.Failure, ErrBudget):
		return "budget"
	}
	return "call"
}
