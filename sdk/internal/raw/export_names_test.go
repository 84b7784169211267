package raw_test

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
)

// The //go:wasmexport and //go:wasmimport names must be literals, so a test
// holds them to package abi's constants.

var directive = regexp.MustCompile(`(?m)^//go:(wasmexport|wasmimport) (.+)$`)

func directives(t *testing.T, file, kind string) []string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range directive.FindAllStringSubmatch(string(src), -1) {
		if m[1] == kind {
			names = append(names, m[2])
		}
	}
	return names
}

func TestExportNames(t *testing.T) {
	got := directives(t, "exports_wasip1.go", "wasmexport")
	want := []string{abi.VersionExport, abi.ExportMalloc, abi.ExportManifest, abi.ExportReconcile, abi.ExportAdmit}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("exports_wasip1.go exports %q, want %q", got, want)
	}
}

func TestVersionMarker(t *testing.T) {
	const marker = "kubeplug_abi_version_1_5_0"
	if marker != abi.VersionExport {
		t.Fatalf("abi.VersionExport is %q: update the marker in exports_wasip1.go and this test", abi.VersionExport)
	}
	if !slices.Contains(directives(t, "exports_wasip1.go", "wasmexport"), marker) {
		t.Errorf("exports_wasip1.go does not export %q", marker)
	}
}

func TestImportNames(t *testing.T) {
	got := directives(t, "imports_wasip1.go", "wasmimport")
	want := []string{abi.ImportModule + " " + abi.ImportWriteLog}
	if !slices.Equal(got, want) {
		t.Errorf("imports_wasip1.go imports %q, want %q", got, want)
	}
}
