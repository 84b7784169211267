package sdk_test

import (
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
)

// The SDK refuses what the host refuses: it used to register a module
// whose admission rules named an operation the API server does not know.
func TestManifestRefusesWhatTheHostRefuses(t *testing.T) {
	m := testModule
	m.Admit = allowAll
	m.Admission = &abi.Admission{Rules: []abi.AdmissionRule{{
		Operations: []string{"PATCH"}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims"},
	}}}
	if _, err := m.Manifest(); err == nil || !strings.Contains(err.Error(), `operations[0] "PATCH" is not CREATE`) {
		t.Fatalf("Manifest: %v, want the host's refusal of PATCH", err)
	}
}
