package main

import (
	"strings"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// messageBytes keeps the encoded result under the default maxOutput (1 MiB).
const messageBytes = 1_000_000

func init() {
	sdk.Register(sdk.Module{
		Name:         "event-flood",
		Version:      "0.1.0",
		Subject:      abi.SubjectStatefulSet,
		Description:  "Records a Warning event with a message of a million bytes.",
		Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
		Reconcile:    reconcile,
	})
}

func main() {}

var message = strings.Repeat("x", messageBytes)

func reconcile(req *sdk.Request) (sdk.Result, error) {
	set := req.StatefulSet()
	if set == nil {
		return sdk.Result{}, nil
	}
	return sdk.Result{Actions: []abi.Action{sdk.Warning(sdk.RefOf(set), "HostileFlood", message)}}, nil
}
