// Command stalemark is a test fixture of kubeplug check, with a stale-read
// bug on purpose that one stale round does not show: do not use it.
//
// It deletes the claims of replicas at or above the StatefulSet's
// spec.replicas in two reconciles: the first marks such a claim (its
// finalizer example.com/condemned), the second deletes a marked one that
// is still condemned, and once the claim is being deleted the mark is let
// go. A mark on a claim back in range is taken off. Deciding on a set its
// cache holds, it deletes a new replica's claim when that cache is behind a
// scale-up for two reconciles in a row; behind for one, the second
// reconcile sees the scale-up and takes the mark off.
package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/check/testdata/guests/internal/fixture"
	"github.com/kubeplug/kubeplug/sdk"
)

const mark = "example.com/condemned"

func init() {
	fixture.Register("stalemark", "deletes claims on a view of its StatefulSet stale for two reconciles", fixture.FinalizersAndDelete(), decide)
}

func main() {}

func decide(_ *sdk.Request, set *abi.StatefulSet, ordinal int, c *abi.PersistentVolumeClaim) []abi.Action {
	marked := fixture.Has(c, mark)
	switch {
	case c.Metadata.DeletionTimestamp != "":
		if marked {
			return []abi.Action{sdk.RemoveFinalizer(sdk.RefOf(c), mark)}
		}
	case ordinal < int(set.Spec.Replicas):
		if marked {
			return []abi.Action{sdk.RemoveFinalizer(sdk.RefOf(c), mark)}
		}
	case marked:
		return []abi.Action{sdk.DeleteObject(sdk.RefOf(c))}
	default:
		return []abi.Action{sdk.AddFinalizer(sdk.RefOf(c), mark)}
	}
	return nil
}
