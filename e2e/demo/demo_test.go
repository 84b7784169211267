package demo_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/demo"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TestDemo plays `make demo` from freshly built binaries: every scene must
// see in the API server what it narrates.
func TestDemo(t *testing.T) {
	bin, err := testenv.Kubeplug()
	if err != nil {
		t.Fatal(err)
	}
	var guests string
	for _, g := range []string{"examples/warnretain", "examples/storagepolicy", "guests/retention", "guests/reclaim", "examples/retentionlite", "guests/templateupdate"} {
		p, err := testenv.Guest(g)
		if err != nil {
			t.Fatal(err)
		}
		guests = filepath.Dir(p)
	}
	var out bytes.Buffer
	err = demo.Run(context.Background(), demo.Options{Root: testenv.Root(), Kubeplug: bin, Guests: guests, Out: &out})
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "skipped") {
		t.Errorf("a scene was skipped:\n%s", out.String())
	}
}
