package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/hostile/guests/internal/fixed"
)

const actions = 100_000

func init() {
	// {"status": 0, "result": {"actions": [{}, {}, ...]}}
	response := fixed.ResultHead(actions)
	for range actions {
		response = append(response, 0x80)
	}
	fixed.Answer(abi.Manifest{
		Name:         "empty-actions",
		Version:      "0.1.0",
		ABIVersion:   abi.Current.String(),
		Subject:      abi.SubjectStatefulSet,
		Hooks:        []string{abi.HookReconcile},
		Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
		Description:  "Returns 100,000 empty actions.",
	}, response)
}

func main() {}
