package actions

import "github.com/kubeplug/kubeplug/abi"

// Outcome is what became of one action. The values are lower-case words so
// that they serve as metric labels as they are.
type Outcome string

const (
	// Executed: the write, CSI call or event was made.
	Executed Outcome = "executed"
	// Unchanged: the object already was as the action asks; nothing was sent.
	Unchanged Outcome = "unchanged"
	// Refused: the action failed validation or broke one of the host's own
	// rules; nothing was sent for it, and later actions were skipped.
	Refused Outcome = "refused"
	// Conflict: the object is no longer the one the module saw; later
	// actions were skipped and the subject must be reconciled again.
	Conflict Outcome = "conflict"
	// Failed: the call failed otherwise; later actions were skipped.
	Failed Outcome = "failed"
	// Shadow: shadow mode; the action was valid and would have written,
	// and nothing was sent.
	Shadow Outcome = "shadow"
	// Skipped: an earlier action conflicted or failed.
	Skipped Outcome = "skipped"
)

// Outcomes lists every Outcome, for callers that label metrics by outcome.
func Outcomes() []Outcome {
	return []Outcome{Executed, Unchanged, Refused, Conflict, Failed, Shadow, Skipped}
}

// ActionReport is the outcome of one action of a Result.
type ActionReport struct {
	// Index is the action's position in Result.Actions.
	Index  int
	Type   string
	Target abi.ObjectRef
	// Outcome is what became of it.
	Outcome Outcome
	// Write describes the call made, or in shadow mode the one that would
	// have been (e.g. `merge patch {"metadata":...}`); empty when none.
	Write string
	// Err says why the action was refused, conflicted or failed.
	Err error
}

// Report lists what became of each action of a Result, in order.
type Report struct {
	Actions []ActionReport
	// Counts counts Actions by outcome.
	Counts map[Outcome]int
	// Written lists the objects the Result's patches and deletes changed,
	// each with the resourceVersion the input gave it: the version a cache
	// that has not seen the writes yet still holds (see Stale).
	Written map[abi.ObjectRef]string
}

func (r *Report) add(a ActionReport) {
	if r.Counts == nil {
		r.Counts = make(map[Outcome]int)
	}
	r.Actions = append(r.Actions, a)
	r.Counts[a.Outcome]++
}
