package abi_test

import (
	"errors"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
)

// The tables are copies: changing what an accessor returns changes nothing.
func TestContractTablesAreCopies(t *testing.T) {
	abi.Hooks()[0].Export = "changed"
	abi.ActionTypes()[0] = "changed"
	abi.Kinds()[abi.KindPod] = abi.KindInfo{}
	info, _ := abi.Subject(abi.SubjectStatefulSet).Info()
	info.Related[0] = "changed"
	if h, _ := abi.Hook(abi.HookReconcile).Info(); h.Export != abi.ExportReconcile {
		t.Errorf("reconcile's export is %q", h.Export)
	}
	if !abi.ActionType(abi.ActionUpdateOwnerReferences).Known() || abi.KindOf(abi.KindPod).Resource != "pods" {
		t.Error("a table changed through a copy")
	}
	if info, _ := abi.Subject(abi.SubjectStatefulSet).Info(); info.Related[0] != abi.KindPod {
		t.Errorf("statefulset's related kinds are %v", info.Related)
	}
	if !abi.Subject(abi.SubjectStatefulSet).Namespaced() || abi.Subject(abi.SubjectPersistentVolume).Namespaced() {
		t.Error("namespaced is wrong")
	}
}

// The SDK accepted admission operations the host refused; Validate is now
// both sides' rule.
func TestValidateRefusesUnknownOperation(t *testing.T) {
	m := abi.Manifest{
		Name: "m", Version: "1", ABIVersion: abi.Current.String(), Subject: abi.SubjectStatefulSet,
		Hooks: []string{abi.HookAdmit},
		Admission: &abi.Admission{Rules: []abi.AdmissionRule{{
			Operations: []string{"PATCH"}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
		}}},
	}
	var e *abi.ManifestError
	if err := m.Validate(abi.Current); !errors.As(err, &e) || e.Field != "admission.rules.operations" {
		t.Fatalf("Validate: %v", err)
	}
	m.Admission.Rules[0].Operations = []string{abi.OperationCreate}
	if err := m.Validate(abi.Current); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}
