package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/config"
)

// FuzzParse: whatever the bytes, Parse returns either a problem list that
// wraps ErrInvalid or a File the host can use as it is (at least one module,
// names unique, selectors set), and Grant and AllowBlock on its modules
// neither panic nor disagree with each other. Seeded with the reference
// file and the README's allow: examples.
func FuzzParse(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "host.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte("modules:\n- path: guests/m.wasm\n  allow: [{action: deleteVolume}, {action: event, resources: [\"*\"]}]\n"))
	f.Add([]byte("modules:\n- &a {path: guests/m.wasm, mode: shadow, allow: []}\n- <<: *a\n  path: guests/n.wasm\nreconcileTimeout: 1s\n"))
	dir := f.TempDir()
	for name, content := range modules {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	hostYAML := filepath.Join(dir, "host.yaml")
	asks := abi.Manifest{Name: "m", Subject: abi.SubjectStatefulSet, Capabilities: []abi.Capability{
		{Action: abi.ActionEvent, Resources: []string{"statefulsets", "*"}},
		{Action: abi.ActionDeleteVolume},
	}}

	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := config.Parse(data, hostYAML)
		if err != nil {
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("an error that does not wrap ErrInvalid: %v", err)
			}
			return
		}
		if len(file.Modules) == 0 {
			t.Fatal("a valid file with no module")
		}
		names := map[string]bool{}
		for i := range file.Modules {
			m := &file.Modules[i]
			if names[m.Name] || m.Name == "" {
				t.Fatalf("module name %q empty or repeated", m.Name)
			}
			names[m.Name] = true
			if m.LabelSelector == nil {
				t.Fatal("a nil selector")
			}
			_ = m.LabelSelector.Matches(labels.Set{"app": "web"})
			granted, err := m.Grant(asks)
			switch {
			case err != nil && !errors.Is(err, config.ErrNotAllowed):
				t.Fatalf("a refusal that does not wrap ErrNotAllowed: %v", err)
			case err != nil:
				if m.Allow != nil && len(config.Beyond(asks.Capabilities, m.Allow)) == 0 {
					t.Fatalf("refused though allow: covers the manifest: %v", err)
				}
			case len(granted) != len(asks.Capabilities):
				t.Fatalf("granted %v, want the manifest's %v", granted, asks.Capabilities)
			}
		}
	})
}
