package main

import (
	"fmt"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime/hostile/guests/internal/fixed"
)

const types = 40_000

func init() {
	// {"status": 0, "result": {"actions": [{"type": "u00000"}, ...]}}
	response := fixed.ResultHead(types)
	for i := range types {
		t := fmt.Sprintf("u%05d", i)
		response = append(response, 0x81, 0xa4, 't', 'y', 'p', 'e', 0xa0|byte(len(t)))
		response = append(response, t...)
	}
	fixed.Answer(abi.Manifest{
		Name:         "unknown-types",
		Version:      "0.1.0",
		ABIVersion:   abi.Current.String(),
		Subject:      abi.SubjectStatefulSet,
		Hooks:        []string{abi.HookReconcile},
		Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
		Description:  "Returns 40,000 actions of distinct unknown types.",
	}, response)
}

func main() {}
