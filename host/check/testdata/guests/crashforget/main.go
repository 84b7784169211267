// Command crashforget is a test fixture of kubeplug check, with a
// crash-safety bug on purpose: do not use it.
//
// It backs up a condemned replica's claim before the claim goes: it keeps
// its finalizer on every claim of the set; on scale-down it deletes the
// condemned claims (the finalizer holds them) and notes in memory that
// their backups ran; on a later reconcile it removes the finalizer of the
// claims its memory says were backed up. The note lives in the module's
// memory, not in the cluster: a host that crashes between the two writes
// comes back without it, and the claims stay in Terminating for ever, their
// volumes held.
package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/check/testdata/guests/internal/fixture"
	"github.com/kubeplug/kubeplug/sdk"
)

const finalizer = "example.com/backup"

// backedUp is the bug: what the next write depends on, in memory only.
var backedUp = map[string]bool{}

func init() {
	fixture.Register("crashforget", "a crash between its two writes strands claims", fixture.FinalizersAndDelete(), decide)
}

func main() {}

func decide(_ *sdk.Request, set *abi.StatefulSet, ordinal int, c *abi.PersistentVolumeClaim) []abi.Action {
	has := fixture.Has(c, finalizer)
	switch {
	case c.Metadata.DeletionTimestamp != "":
		if has && backedUp[c.Metadata.UID] {
			return []abi.Action{sdk.RemoveFinalizer(sdk.RefOf(c), finalizer)}
		}
	case ordinal >= int(set.Spec.Replicas):
		backedUp[c.Metadata.UID] = true
		return []abi.Action{sdk.DeleteObject(sdk.RefOf(c))}
	case !has:
		return []abi.Action{sdk.AddFinalizer(sdk.RefOf(c), finalizer)}
	}
	return nil
}
