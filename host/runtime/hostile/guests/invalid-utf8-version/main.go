package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	sdk.Register(sdk.Module{
		Name:         "invalid-utf8-version",
		Version:      "0.1.\xff\xfe",
		Subject:      abi.SubjectStatefulSet,
		Description:  "Declares a version that is invalid UTF-8.",
		Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
		Reconcile:    func(*sdk.Request) (sdk.Result, error) { return sdk.Result{}, nil },
	})
}

func main() {}
