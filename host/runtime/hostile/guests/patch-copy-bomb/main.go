package main

import (
	"fmt"
	"strings"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

type config struct {
	Copies int  `json:"copies"`
	Churn  bool `json:"churn"`
	// Size is the big label's bytes (60 KiB by default); Flat copies it
	// alone, not the labels with the copies made so far.
	Size int  `json:"size"`
	Flat bool `json:"flat"`
}

func init() {
	sdk.Register(sdk.Module{
		Name:         "patch-copy-bomb",
		Version:      "0.1.0",
		Subject:      abi.SubjectStatefulSet,
		Description:  "Answers a claim's creation with a patch that copies the claim's labels into themselves.",
		ConfigSchema: `{"type": "object", "properties": {"copies": {"type": "integer"}, "churn": {"type": "boolean"}, "size": {"type": "integer"}, "flat": {"type": "boolean"}}}`,
		Capabilities: []abi.Capability{{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}, Paths: []string{"/metadata/labels"}}},
		Admission: &abi.Admission{Mutates: true, Rules: []abi.AdmissionRule{{
			Operations: []string{abi.OperationCreate}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims"},
		}}},
		Admit: admit,
	})
}

func main() {}

func admit(req *abi.AdmitRequest) (sdk.Admission, error) {
	cfg := config{Copies: 24, Size: 60 << 10}
	if err := sdk.AdmitConfig(req, &cfg); err != nil {
		return sdk.Admission{}, err
	}
	a := sdk.Allow()
	a.Ops = []abi.PatchOperation{
		// The claim may have no labels: the first op gives it some.
		{Op: abi.PatchAdd, Path: "/metadata/labels", Value: []byte(`{"big":"` + strings.Repeat("x", cfg.Size) + `"}`)},
	}
	for i := range cfg.Copies {
		if cfg.Churn {
			a.Ops = append(a.Ops,
				abi.PatchOperation{Op: abi.PatchCopy, From: "/metadata/labels/big", Path: "/metadata/labels/copy"},
				abi.PatchOperation{Op: abi.PatchRemove, Path: "/metadata/labels/copy"})
			continue
		}
		from := "/metadata/labels"
		if cfg.Flat {
			from += "/big"
		}
		a.Ops = append(a.Ops, abi.PatchOperation{Op: abi.PatchCopy, From: from, Path: fmt.Sprintf("/metadata/labels/c%d", i)})
	}
	return a, nil
}
