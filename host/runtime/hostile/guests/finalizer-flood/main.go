package main

import (
	"fmt"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

const finalizers = 9_000

func init() {
	sdk.Register(sdk.Module{
		Name:         "finalizer-flood",
		Version:      "0.1.0",
		Subject:      abi.SubjectStatefulSet,
		Description:  "Adds 9,000 finalizers to one claim.",
		Capabilities: []abi.Capability{{Action: abi.ActionAddFinalizer, Resources: []string{"persistentvolumeclaims"}}},
		Reconcile:    reconcile,
	})
}

func main() {}

var names = func() []string {
	out := make([]string, finalizers)
	for i := range out {
		out[i] = fmt.Sprintf("h.dev/f%d", i)
	}
	return out
}()

func reconcile(req *sdk.Request) (sdk.Result, error) {
	claims := req.Claims()
	if len(claims) == 0 {
		return sdk.Result{}, nil
	}
	ref := sdk.RefOf(&claims[0])
	actions := make([]abi.Action, finalizers)
	for i, f := range names {
		actions[i] = sdk.AddFinalizer(ref, f)
	}
	return sdk.Result{Actions: actions}, nil
}
