package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	var caps []abi.Capability
	for _, t := range abi.ActionTypes() {
		switch t {
		case abi.ActionApply, abi.ActionCreate, abi.ActionApplyStatus:
			// A declared module's (ABI 1.6): a statefulset module
			// cannot ask for them.
			continue
		}
		caps = append(caps, abi.Capability{Action: t, Resources: []string{"*"}})
	}
	sdk.Register(sdk.Module{
		Name:         "beyond-allow",
		Version:      "0.1.0",
		Subject:      abi.SubjectStatefulSet,
		Description:  "Asks for every action on every resource, and deletes what it sees.",
		Capabilities: caps,
		Reconcile:    reconcile,
	})
}

func main() {}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	set := req.StatefulSet()
	if set == nil {
		return sdk.Result{}, nil
	}
	var actions []abi.Action
	if scs := req.StorageClasses(); len(scs) > 0 {
		actions = append(actions, sdk.DeleteObject(sdk.RefOf(&scs[0])))
	}
	if claims := req.Claims(); len(claims) > 0 {
		actions = append(actions, sdk.DeleteObject(sdk.RefOf(&claims[0])))
	}
	if pods := req.Pods(); len(pods) > 0 {
		actions = append(actions, sdk.DeleteObject(sdk.RefOf(&pods[0])))
	}
	actions = append(actions, sdk.DeleteObject(sdk.RefOf(set)))
	return sdk.Result{Actions: actions}, nil
}
