package admission

import "errors"

// Why the failure policy answered instead of the module. Match with
// errors.Is on Outcome.Failure.
var (
	// ErrCall: the call failed (trap, deadline, memory, output refused,
	// the module's own error).
	ErrCall = errors.New("module call failed")
	// ErrPatch: the module's patch does not apply to the object, or is
	// not allowed (touches a path its granted mutate capabilities do not
	// cover, gives the object an owner reference the host's rule refuses,
	// comes with a denial, or the module is not a mutating one).
	ErrPatch = errors.New("patch refused")
	// ErrRequest: the admission request could not be turned into the
	// module's input (an object that does not decode as its kind, a cache
	// read that failed).
	ErrRequest = errors.New("bad admission request")
	// ErrBudget: the webhook server holds its limit of memory for reviews
	// in flight (ServerLimits.MaxInFlightBytes), and the review's next step
	// would take more.
	ErrBudget = errors.New("over budget")
)

// ErrReview wraps the server's refusals of an HTTP request that is not one
// AdmissionReview v1 with a request.
var ErrReview = errors.New("bad AdmissionReview")
