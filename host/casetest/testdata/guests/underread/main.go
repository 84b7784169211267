// Command underread is a test fixture of kubeplug test, with bugs on
// purpose: its projection leaves out what its reconcile reads (the pods'
// phase, a label whose key it does not name, a condition its filter
// drops), so that the check of every reconcile against the whole request
// has something to catch. What it does declare (the label app, the Ready
// condition's status) it reads too, and that must pass. Do not use it.
package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	sdk.Register(sdk.Module{
		Name:         "underread",
		Version:      "0.1.0",
		Subject:      abi.SubjectStatefulSet,
		Description:  "kubeplug test fixture: reads pod fields it did not declare (do not use).",
		Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
		// The bugs: status.phase, the label tier and the PodScheduled
		// condition are read below but not listed.
		Projection: []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels[app]", "status.conditions[type=Ready].status"}}},
		Reconcile:  reconcile,
	})
}

// reconcile warns about every pod that is Pending, of tier db, not
// scheduled, or of app web and not Ready.
func reconcile(req *sdk.Request) (sdk.Result, error) {
	set := req.StatefulSet()
	if set == nil {
		return sdk.Result{}, nil
	}
	var res sdk.Result
	warn := func(reason, msg string) {
		res.Actions = append(res.Actions, sdk.Warning(sdk.RefOf(set), reason, msg))
	}
	for _, p := range req.Pods() {
		if p.Status.Phase == "Pending" {
			warn("PodPending", p.Metadata.Name+" is Pending")
		}
		if p.Metadata.Labels["tier"] == "db" {
			warn("DatabasePod", p.Metadata.Name+" is of tier db")
		}
		for _, c := range p.Status.Conditions {
			switch {
			case c.Type == "PodScheduled" && c.Status == "False":
				warn("PodUnscheduled", p.Metadata.Name+" is not scheduled")
			case c.Type == "Ready" && c.Status == "False" && p.Metadata.Labels["app"] == "web":
				warn("WebPodNotReady", p.Metadata.Name+" is not Ready")
			}
		}
	}
	return res, nil
}

func main() {}
