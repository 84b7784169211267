// Command underread is a test fixture of kubeplug test, with a bug on
// purpose: its projection leaves out a field its reconcile reads (the pods'
// phase), so that the check of every reconcile against the whole request
// has something to catch. Do not use it.
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
		Description:  "kubeplug test fixture: reads a pod field it did not declare (do not use).",
		Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
		// The bug: status.phase is read below but not listed.
		Projection: []abi.ObjectFields{{Kind: abi.KindPod, Fields: []string{"metadata.labels"}}},
		Reconcile:  reconcile,
	})
}

// reconcile warns about every pod that is Pending.
func reconcile(req *sdk.Request) (sdk.Result, error) {
	set := req.StatefulSet()
	if set == nil {
		return sdk.Result{}, nil
	}
	var res sdk.Result
	for _, p := range req.Pods() {
		if p.Status.Phase == "Pending" {
			res.Actions = append(res.Actions, sdk.Warning(sdk.RefOf(set), "PodPending", p.Metadata.Name+" is Pending"))
		}
	}
	return res, nil
}

func main() {}
