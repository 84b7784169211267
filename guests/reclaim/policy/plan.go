package policy

import (
	"strings"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// plan collects the actions of one reconcile, all on the subject volume, and
// a reason for each, which becomes the result's message for the host's log.
type plan struct {
	target  abi.ObjectRef
	actions []abi.Action
	why     []string
	requeue time.Duration
}

func newPlan(pv *abi.PersistentVolume) *plan { return &plan{target: sdk.RefOf(pv)} }

func (p *plan) add(a abi.Action, why string) {
	p.actions = append(p.actions, a)
	p.why = append(p.why, why)
}

func (p *plan) addFinalizer(f, why string) { p.add(sdk.AddFinalizer(p.target, f), why) }

func (p *plan) removeFinalizer(f, why string) { p.add(sdk.RemoveFinalizer(p.target, f), why) }

func (p *plan) result() sdk.Result {
	return sdk.Result{Actions: p.actions, RequeueAfter: p.requeue, Message: strings.Join(p.why, "; ")}
}
