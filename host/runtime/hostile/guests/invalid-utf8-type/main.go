package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	sdk.Register(sdk.Module{
		Name:         "invalid-utf8-type",
		Version:      "0.1.0",
		Subject:      abi.SubjectStatefulSet,
		Description:  "Returns an action whose type is invalid UTF-8.",
		Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
		Reconcile:    reconcile,
	})
}

func main() {}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	set := req.StatefulSet()
	if set == nil {
		return sdk.Result{}, nil
	}
	a := sdk.Warning(sdk.RefOf(set), "Hostile", "an action type of invalid UTF-8")
	a.Type = "ev\xff\xfeent"
	return sdk.Result{Actions: []abi.Action{a}}, nil
}
