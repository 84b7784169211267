package sdk

import "errors"

// Errors returned by the SDK. Match them with errors.Is.
var (
	// ErrConfig wraps every failure to decode the module configuration.
	ErrConfig = errors.New("invalid module config")
	// ErrBadNow reports a request whose now is not an RFC 3339 time.
	ErrBadNow = errors.New("request time is not RFC 3339")
	// ErrNegativeRequeue reports a Result with a negative RequeueAfter.
	ErrNegativeRequeue = errors.New("negative RequeueAfter")
	// ErrQuantity wraps every failure to parse a Kubernetes quantity.
	ErrQuantity = errors.New("invalid quantity")
)
