// Command stalereap is a test fixture of kubeplug check, with a stale-read
// bug on purpose: do not use it.
//
// It deletes the claims of replicas at or above the StatefulSet's
// spec.replicas, as soon as it sees them, deciding on the set its cache
// holds. A cache that has not seen a scale-up yet shows the old replicas
// beside claims the StatefulSet controller has already created for the new
// ones: it deletes a claim a running replica needs. (The claims' own
// resourceVersion preconditions do not help: the claims it deletes are
// current.)
package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	sdk.Register(sdk.Module{
		Name:         "stalereap",
		Version:      "0.1.0",
		Subject:      abi.SubjectStatefulSet,
		Description:  "kubeplug check fixture: deletes claims on a stale view of its StatefulSet (do not use).",
		Capabilities: []abi.Capability{{Action: abi.ActionDeleteObject, Resources: []string{"persistentvolumeclaims"}}},
		Reconcile:    reconcile,
	})
}

func main() {}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	set := req.StatefulSet()
	if set == nil || set.Metadata.DeletionTimestamp != "" {
		return sdk.Result{}, nil
	}
	var out []abi.Action
	for _, c := range req.Claims() {
		_, ordinal, ok := sdk.MatchClaim(set, c.Metadata.Name)
		if ok && ordinal >= int(set.Spec.Replicas) && c.Metadata.DeletionTimestamp == "" {
			out = append(out, sdk.DeleteObject(sdk.RefOf(&c)))
		}
	}
	return sdk.Result{Actions: out}, nil
}
