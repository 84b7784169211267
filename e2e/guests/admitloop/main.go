// Command admitloop is a hostile admission module for the end-to-end tests:
// its admit hook never returns. It validates ConfigMap creation, so a test
// can call it through the API server in a namespace of its own.
package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	sdk.Register(sdk.Module{
		Name: "admitloop", Version: "0.1.0", Subject: abi.SubjectStatefulSet,
		Description: "Never answers an admission request.",
		Admit:       admit,
		Admission: &abi.Admission{Rules: []abi.AdmissionRule{{
			Operations: []string{abi.OperationCreate}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"},
		}}},
	})
}

func main() {}

// spins counts the loop's passes, so that the loop has an effect the
// compiler keeps.
var spins uint64

func admit(*abi.AdmitRequest) (sdk.Admission, error) {
	for {
		spins++
	}
}
