// Package benchpolicy is a fixed, retention-shaped policy used only to
// measure the cost of a reconcile: it reads every claim and pod of a
// StatefulSet, parses quantities, and asks for an owner reference on every
// claim that lacks one, so the request and the result are both large. It
// registers itself with the SDK when imported, so the same code runs as the
// guest in ./guest and natively in the host's benchmarks.
package benchpolicy

import (
	"fmt"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	sdk.Register(sdk.Module{
		Name:        "benchpolicy",
		Version:     "0.0.0",
		Subject:     abi.SubjectStatefulSet,
		Description: "benchmark workload: owner references on every claim",
		Capabilities: []abi.Capability{
			{Action: abi.ActionUpdateOwnerReferences, Resources: []string{"persistentvolumeclaims"}},
			{Action: abi.ActionEvent, Resources: []string{"statefulsets"}},
		},
		// What reconcile reads (ABI 1.3): the host sends nothing else.
		Projection: []abi.ObjectFields{
			{Kind: abi.KindStatefulSet, Fields: []string{"spec.replicas", "spec.ordinals", "spec.volumeClaimTemplates.metadata.name"}},
			{Kind: abi.KindPod},
			{Kind: abi.KindPersistentVolumeClaim, Fields: []string{"metadata.ownerReferences", "status.capacity"}},
			{Kind: abi.KindStorageClass},
			{Kind: abi.KindVolumeClaimUpdate},
		},
		Reconcile: reconcile,
	})
}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	set := req.StatefulSet()
	if set == nil {
		return sdk.Result{}, nil
	}
	start, end := sdk.OrdinalRange(set)
	owner := sdk.NewControllerRef(set)
	var res sdk.Result
	var total sdk.Quantity
	for i := range req.Raw().StatefulSet.Claims {
		claim := &req.Raw().StatefulSet.Claims[i]
		_, ordinal, ok := sdk.MatchClaim(set, claim.Metadata.Name)
		if !ok {
			continue
		}
		if q, err := sdk.ParseQuantity(claim.Status.Capacity["storage"]); err == nil {
			total = total.Add(q)
		}
		if ordinal < start || ordinal >= end || sdk.HasOwner(&claim.Metadata, owner.UID) {
			continue
		}
		res.Actions = append(res.Actions, sdk.UpdateOwnerReferences(sdk.RefOf(claim), nil, owner))
	}
	res.Actions = append(res.Actions, sdk.Normal(sdk.RefOf(set), "Measured",
		fmt.Sprintf("%d pods, %d claims, %s", len(req.Raw().StatefulSet.Pods), len(req.Raw().StatefulSet.Claims), total)))
	return res, nil
}
