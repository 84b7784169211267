package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	sdk.Register(sdk.Module{
		Name:         "retentionlite",
		Version:      "0.1.0",
		Subject:      abi.SubjectStatefulSet,
		Description:  "Gives a StatefulSet's claims to the set under whenDeleted: Delete; ignores whenScaled.",
		Capabilities: []abi.Capability{{Action: abi.ActionUpdateOwnerReferences, Resources: []string{"persistentvolumeclaims"}}},
		Reconcile:    reconcile,
	})
}

// main is never called: the host runs the module as a WASI reactor.
func main() {}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	set := req.StatefulSet()
	if set == nil || set.Metadata.DeletionTimestamp != "" {
		return sdk.Result{}, nil
	}
	p := set.Spec.PersistentVolumeClaimRetentionPolicy
	if p == nil || p.WhenDeleted != "Delete" {
		return sdk.Result{}, nil
	}
	owner := sdk.NewControllerRef(set)
	var out []abi.Action
	for i := range req.Raw().StatefulSet.Claims {
		claim := &req.Raw().StatefulSet.Claims[i]
		if claim.Metadata.DeletionTimestamp != "" || sdk.HasOwner(&claim.Metadata, set.Metadata.UID) {
			continue
		}
		out = append(out, sdk.UpdateOwnerReferences(sdk.RefOf(claim), nil, owner))
	}
	return sdk.Result{Actions: out}, nil
}
