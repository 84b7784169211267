package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	sdk.Register(sdk.Module{
		Name:         "claim-shrink",
		Version:      "0.1.0",
		Subject:      abi.SubjectStatefulSet,
		Description:  "Applies a storage request lower than the current one to every claim.",
		Capabilities: []abi.Capability{{Action: abi.ActionApplyClaim, Resources: []string{"persistentvolumeclaims"}}},
		Reconcile:    reconcile,
	})
}

func main() {}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	var actions []abi.Action
	claims := req.Claims()
	for i := range claims {
		actions = append(actions, sdk.ApplyClaim(sdk.RefOf(&claims[i]), abi.ClaimApply{
			Resources: &abi.ResourceRequirements{Requests: map[string]string{"storage": "1"}},
		}))
	}
	return sdk.Result{Actions: actions}, nil
}
