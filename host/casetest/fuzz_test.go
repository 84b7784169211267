package casetest_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubeplug/kubeplug/host/casetest"
)

// FuzzParse: whatever the bytes, Parse returns either an *InputError or
// cases that each have a name and objects with a kind and a name. Seeded
// with every case file of the reference modules, the examples and the
// command's tests.
func FuzzParse(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{
		"../../guests/*/testdata/*.yaml",
		"../../examples/*/testdata/*.yaml",
		"../cmd/kubeplug/testdata/*.yaml",
		"../check/testdata/*.yaml",
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, m...)
	}
	if len(seeds) == 0 {
		f.Fatal("no seed case files found")
	}
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := casetest.Parse("case.yaml", data)
		if err != nil {
			var ie *casetest.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("an error that is not an *InputError: %v", err)
			}
			return
		}
		for _, c := range file.Cases {
			if c.Name == "" {
				t.Fatal("a case without a name")
			}
			for _, obj := range c.Objects {
				if obj["kind"] == nil {
					t.Fatalf("an object without a kind: %v", obj)
				}
			}
		}
	})
}
