package controller

import (
	"errors"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

// Result says when a key is reconciled again, in controller-runtime's
// shape: a reconcile returns (Result, error), and the worker decides in one
// switch (see Controller.next):
//   - an error that is not terminal: again, with backoff (a conflict, a
//     failed call or write, a panic);
//   - otherwise RequeueAfter > 0: again after that delay (the module asked
//     for it, or the caches have not caught up with the host's own writes);
//   - otherwise: not until the next change to the subject.
//
// Unlike controller-runtime, a terminal error does not cancel RequeueAfter:
// a module that asked to be called again after a refusal is.
type Result struct {
	RequeueAfter time.Duration
}

// TerminalError wraps err so that its key is not retried with backoff, as
// controller-runtime's reconcile.TerminalError does: the reconcile would
// only ask for the same thing again (a refusal), and the next change to
// the subject reconciles it again. Its message is err's; nil stays nil.
func TerminalError(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err}
}

type terminalError struct{ err error }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// IsTerminal reports whether err, or an error it wraps, is a TerminalError.
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}

// The outcome labels of kubeplug_reconciles_total, and of Outcome.Result.
const (
	OutcomeSuccess  = "success"
	OutcomeRequeue  = "requeue"
	OutcomeConflict = "conflict"
	OutcomeRefused  = "refused"
	OutcomeError    = "error"
)

// outcomes lists the labels, for series created at zero.
var outcomes = []string{OutcomeSuccess, OutcomeRequeue, OutcomeConflict, OutcomeRefused, OutcomeError}

// outcome is the label of a reconcile that returned res and err: the one
// place a result gets its name.
func outcome(res Result, err error) string {
	switch {
	case IsTerminal(err):
		return OutcomeRefused // the one terminal error: a refused action
	case errors.Is(err, actions.ErrConflict):
		return OutcomeConflict
	case err != nil:
		return OutcomeError
	case res.RequeueAfter > 0:
		return OutcomeRequeue
	}
	return OutcomeSuccess
}

// actionReasons are the reasons of the Normal event recording an executed
// action, by type.
var actionReasons = map[string]string{
	abi.ActionUpdateOwnerReferences:   "OwnerReferencesUpdated",
	abi.ActionAddFinalizer:            "FinalizerAdded",
	abi.ActionRemoveFinalizer:         "FinalizerRemoved",
	abi.ActionDeleteObject:            "Deleted",
	abi.ActionApplyClaim:              "ClaimApplied",
	abi.ActionSetPartition:            "PartitionSet",
	abi.ActionUpdateClaimUpdateStatus: "StatusUpdated",
	abi.ActionDeleteVolume:            "VolumeDeleted",
}

// event returns the type and reason of the event the controller records
// for an action that came to a.Outcome, ok false when it records none: a
// Normal event for each write (an emitted event is its own record), and a
// Warning for a failed call, with external-provisioner's reason for a
// failed volume deletion so that existing alerts on it keep working. A
// refused action's Warning is the executor's (actions.ReasonActionRefused).
func event(a actions.ActionReport) (eventType, reason string, ok bool) {
	switch {
	case a.Outcome == actions.Executed && a.Type != abi.ActionEvent:
		if r, ok := actionReasons[a.Type]; ok {
			return abi.EventNormal, r, true
		}
		return abi.EventNormal, "ActionExecuted", true
	case a.Outcome == actions.Failed && a.Type == abi.ActionDeleteVolume:
		return abi.EventWarning, "VolumeFailedDelete", true
	case a.Outcome == actions.Failed:
		return abi.EventWarning, "ActionFailed", true
	}
	return "", "", false
}
