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
	"github.com/kubeplug/kubeplug/host/check/testdata/guests/internal/fixture"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	fixture.Register("stalereap", "deletes claims on a stale view of its StatefulSet",
		[]abi.Capability{{Action: abi.ActionDeleteObject, Resources: []string{"persistentvolumeclaims"}}}, decide)
}

func main() {}

func decide(_ *sdk.Request, set *abi.StatefulSet, ordinal int, c *abi.PersistentVolumeClaim) []abi.Action {
	if ordinal >= int(set.Spec.Replicas) && c.Metadata.DeletionTimestamp == "" {
		return []abi.Action{sdk.DeleteObject(sdk.RefOf(c))}
	}
	return nil
}
