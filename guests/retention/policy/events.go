package policy

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// conflictEvent is the ConflictingController Warning that upstream records on
// the StatefulSet (not on the claim) when a claim has an unexpected
// controller. The message names the claim and the reference in the way, and
// what the operator can do about it.
func conflictEvent(set *abi.StatefulSet, o *owners, claim *abi.PersistentVolumeClaim) abi.Action {
	ref, _ := o.unexpectedController(claim)
	name := claim.Metadata.Name
	var msg string
	switch {
	case matchesRef(&ref, &o.set):
		msg = "PersistentVolumeClaim " + name + " refers to an earlier StatefulSet " + ref.Name + " (uid " + ref.UID +
			"): the retention policy is ignored for this claim; the garbage collector deletes it once that StatefulSet is gone, unless another owner keeps it"
	case matchesRef(&ref, &o.pod):
		msg = "PersistentVolumeClaim " + name + " refers to an earlier Pod " + ref.Name + " (uid " + ref.UID +
			"): the retention policy is ignored for this claim; the garbage collector deletes it once that Pod is gone, unless another owner keeps it"
	default:
		msg = "PersistentVolumeClaim " + name + " is controlled by " + ref.Kind + " " + ref.Name + " (" + ref.APIVersion + ", uid " + ref.UID +
			"): the retention policy is ignored for this claim; remove that controller reference for the policy to apply"
	}
	return sdk.Warning(sdk.RefOf(set), ReasonConflictingController, msg)
}
