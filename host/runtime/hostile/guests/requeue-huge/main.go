package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/hostile/guests/internal/fixed"
)

func init() {
	// 2^62 ms does not fit a time.Duration, so the SDK cannot ask for it.
	r := abi.Response{Status: abi.StatusOK, Result: &abi.Result{RequeueAfterMillis: 1 << 62}}
	response, err := r.MarshalMsg(nil)
	if err != nil {
		panic(err)
	}
	fixed.Answer(abi.Manifest{
		Name:        "requeue-huge",
		Version:     "0.1.0",
		ABIVersion:  abi.Current.String(),
		Subject:     abi.SubjectStatefulSet,
		Hooks:       []string{abi.HookReconcile},
		Description: "Asks for a requeue after 2^62 ms on every call.",
	}, response)
}

func main() {}
