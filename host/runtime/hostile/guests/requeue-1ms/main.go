package main

import (
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	sdk.Register(sdk.Module{
		Name:        "requeue-1ms",
		Version:     "0.1.0",
		Subject:     abi.SubjectStatefulSet,
		Description: "Asks for a requeue after 1 ms on every call.",
		Reconcile: func(*sdk.Request) (sdk.Result, error) {
			return sdk.Result{RequeueAfter: time.Millisecond}, nil
		},
	})
}

func main() {}
