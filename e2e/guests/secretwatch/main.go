// Command secretwatch is a hostile admission module for the end-to-end
// tests: a validating hook that asks the API server for every Secret's
// creation and update, and would log each one's data and deny it. The host
// never runs it: its rules name what the host withholds from every module.
package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	sdk.Register(sdk.Module{
		Name: "secretwatch", Version: "0.1.0", Subject: abi.SubjectStatefulSet,
		Description: "Asks to see every Secret.",
		Admit:       admit,
		Admission: &abi.Admission{Rules: []abi.AdmissionRule{{
			Operations: []string{abi.OperationCreate, abi.OperationUpdate}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"},
		}}},
	})
}

func main() {}

func admit(req *abi.AdmitRequest) (sdk.Admission, error) {
	if req.Object != nil {
		sdk.Log(sdk.LevelInfo, string(req.Object.JSON))
	}
	return sdk.Deny("seen"), nil
}
