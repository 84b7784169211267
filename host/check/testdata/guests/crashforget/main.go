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
	"github.com/kubeplug/kubeplug/sdk"
)

const finalizer = "example.com/backup"

// backedUp is the bug: what the next write depends on, in memory only.
var backedUp = map[string]bool{}

func init() {
	sdk.Register(sdk.Module{
		Name:        "crashforget",
		Version:     "0.1.0",
		Subject:     abi.SubjectStatefulSet,
		Description: "kubeplug check fixture: a crash between its two writes strands claims (do not use).",
		Capabilities: []abi.Capability{
			{Action: abi.ActionAddFinalizer, Resources: []string{"persistentvolumeclaims"}},
			{Action: abi.ActionRemoveFinalizer, Resources: []string{"persistentvolumeclaims"}},
			{Action: abi.ActionDeleteObject, Resources: []string{"persistentvolumeclaims"}},
		},
		Reconcile: reconcile,
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
		if !ok {
			continue
		}
		has := false
		for _, f := range c.Metadata.Finalizers {
			has = has || f == finalizer
		}
		switch {
		case c.Metadata.DeletionTimestamp != "":
			if has && backedUp[c.Metadata.UID] {
				out = append(out, sdk.RemoveFinalizer(sdk.RefOf(&c), finalizer))
			}
		case ordinal >= int(set.Spec.Replicas):
			backedUp[c.Metadata.UID] = true
			out = append(out, sdk.DeleteObject(sdk.RefOf(&c)))
		case !has:
			out = append(out, sdk.AddFinalizer(sdk.RefOf(&c), finalizer))
		}
	}
	return sdk.Result{Actions: out}, nil
}
