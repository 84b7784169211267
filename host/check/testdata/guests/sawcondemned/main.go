// Command sawcondemned is a test fixture of kubeplug check, with a
// missed-state bug on purpose: do not use it.
//
// It deletes the claim of a condemned replica once the replica's pod is
// gone, but only if it saw the replica condemned while the pod still ran:
// a claim with no pod may have been kept on purpose before, and is left
// alone. The record of what it saw lives in its memory, not in the
// cluster: a host that never saw the state between the scale-down and the
// pod's deletion (it was restarting, or its informers delivered both at
// once) never deletes the claims. A check whose runs share one instance
// hides that: the instance remembers the unperturbed run, which saw it.
package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/check/testdata/guests/internal/fixture"
	"github.com/kubeplug/kubeplug/sdk"
)

// saw is the bug: "I saw it condemned", in memory only.
var saw = map[string]bool{}

func init() {
	fixture.Register("sawcondemned", "remembers in memory what it saw, and misses what it did not",
		[]abi.Capability{{Action: abi.ActionDeleteObject, Resources: []string{"persistentvolumeclaims"}}}, decide)
}

func main() {}

func decide(req *sdk.Request, set *abi.StatefulSet, ordinal int, c *abi.PersistentVolumeClaim) []abi.Action {
	if ordinal < int(set.Spec.Replicas) || c.Metadata.DeletionTimestamp != "" {
		return nil
	}
	if req.Pod(ordinal) != nil {
		saw[c.Metadata.UID] = true
		return nil
	}
	if saw[c.Metadata.UID] {
		return []abi.Action{sdk.DeleteObject(sdk.RefOf(c))}
	}
	return nil
}
