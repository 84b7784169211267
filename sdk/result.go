package sdk

import (
	"fmt"
	"time"

	"github.com/kubeplug/kubeplug/abi"
)

// Result is a module's answer to one reconcile. The zero Result means
// "nothing to do, reconcile again only on change".
//
//	return sdk.Result{Actions: []abi.Action{sdk.Warning(sdk.RefOf(set), "Reason", "message")}}, nil
type Result struct {
	// Actions are carried out in order; the first that fails stops the rest.
	Actions []abi.Action
	// RequeueAfter asks for another reconcile after this long even if nothing
	// changes; 0 means only on change. It travels in whole milliseconds,
	// rounded up so that a positive duration never becomes 0.
	RequeueAfter time.Duration
	// Message is a short summary for the host's log, optional.
	Message string
}

// ABI returns the result as it goes over the wire.
func (r Result) ABI() (*abi.Result, error) {
	out := new(abi.Result)
	if err := r.abiInto(out); err != nil {
		return nil, err
	}
	return out, nil
}

// abiInto is ABI writing into dst, which the handler reuses across calls.
func (r *Result) abiInto(dst *abi.Result) error {
	if r.RequeueAfter < 0 {
		return fmt.Errorf("%w: %v; use 0 for no requeue", ErrNegativeRequeue, r.RequeueAfter)
	}
	ms := int64(r.RequeueAfter / time.Millisecond)
	if r.RequeueAfter%time.Millisecond != 0 {
		ms++
	}
	*dst = abi.Result{Actions: r.Actions, RequeueAfterMillis: ms, Message: r.Message}
	return nil
}
