package config_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// TestLoadEveryField checks that every field of a full file lands where
// the host reads it.
func TestLoadEveryField(t *testing.T) {
	f, dir, err := load(t, `modules:
- path: guests/retention.wasm
  name: retention
  sha256: 3F1C9D6E0B7A4C2E8F5D1A6B9C3E7F0A2D4B6C8E1F3A5B7D9C0E2F4A6B8D0C1E
  subject: statefulset
  namespaces: [default, prod]
  labelSelector: "app=web,tier in (db)"
  config: {ignoreNamespaces: [kube-system]}
  mode: shadow
  workers: 3
  limits:
    memory: 64Mi
    timeout: 500ms
    instances: 8
    maxOutput: 2Mi
    maxActions: 100
    maxTableElements: 20000
- path: guests/reclaim.wasm
  subject: persistentvolume
csiDrivers:
- name: hostpath.csi.k8s.io
  endpoint: unix:///run/csi/hostpath.sock
  timeout: 30s
- name: other.csi.example.com
  endpoint: /var/lib/kubelet/plugins/other/csi.sock
resync: 0
reconcileTimeout: 45s
`)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "host.yaml"), f.Path)
	require.Equal(t, time.Duration(0), f.Resync)
	require.Equal(t, 45*time.Second, f.ReconcileTimeout)
	require.Equal(t, []config.CSIDriver{
		{Name: "hostpath.csi.k8s.io", Endpoint: "/run/csi/hostpath.sock", Timeout: 30 * time.Second},
		{Name: "other.csi.example.com", Endpoint: "/var/lib/kubelet/plugins/other/csi.sock", Timeout: config.DefaultCSITimeout},
	}, f.CSIDrivers)
	require.Len(t, f.Modules, 2)

	m := f.Modules[0]
	require.Equal(t, "retention", m.Name)
	require.Equal(t, filepath.Join(dir, "guests", "retention.wasm"), m.Path)
	require.Equal(t, "3f1c9d6e0b7a4c2e8f5d1a6b9c3e7f0a2d4b6c8e1f3a5b7d9c0e2f4a6b8d0c1e", m.SHA256, "the pin is kept in lower case")
	require.Equal(t, "statefulset", m.Subject)
	require.Equal(t, []string{"default", "prod"}, m.Namespaces)
	require.Equal(t, "app=web,tier in (db)", m.LabelSelector.String())
	require.True(t, m.LabelSelector.Matches(labels.Set{"app": "web", "tier": "db"}))
	require.False(t, m.LabelSelector.Matches(labels.Set{"app": "web", "tier": "cache"}))
	require.JSONEq(t, `{"ignoreNamespaces":["kube-system"]}`, string(m.Config))
	require.Equal(t, config.ModeShadow, m.Mode)
	require.Equal(t, 3, m.Workers)
	require.Equal(t, runtime.Limits{
		MemoryBytes:      64 << 20,
		Deadline:         500 * time.Millisecond,
		Instances:        8,
		MaxOutputBytes:   2 << 20,
		MaxActions:       100,
		MaxTableElements: 20000,
	}, m.Limits)
	require.NoError(t, m.Limits.Validate())

	pv := f.Modules[1]
	require.Equal(t, "reclaim", pv.Name)
	require.Equal(t, "persistentvolume", pv.Subject)
	require.Empty(t, pv.Namespaces)
}

// TestLoadDefaults checks what a module with only a path gets.
func TestLoadDefaults(t *testing.T) {
	f := mustLoad(t, "modules:\n- path: guests/m.wasm\n")
	require.Equal(t, config.DefaultResync, f.Resync)
	require.Equal(t, config.DefaultReconcileTimeout, f.ReconcileTimeout)
	require.Equal(t, config.DefaultAPIQPS, f.APIQPS)
	require.Empty(t, f.CSIDrivers)
	m := f.Modules[0]
	require.Equal(t, "m", m.Name)
	require.Empty(t, m.SHA256)
	require.Empty(t, m.Subject)
	require.Empty(t, m.Namespaces)
	require.True(t, m.LabelSelector.Empty())
	require.True(t, m.LabelSelector.Matches(labels.Set{"any": "thing"}))
	require.Nil(t, m.Config)
	require.Equal(t, config.ModeEnforce, m.Mode)
	require.Equal(t, config.DefaultWorkers, m.Workers)
	require.Equal(t, runtime.Limits{}, m.Limits, "zero limits take runtime's defaults")
}

// TestLoadNullsAreUnset checks that a field written with no value reads as
// left out, not as an error or a zero.
func TestLoadNullsAreUnset(t *testing.T) {
	f := mustLoad(t, "modules:\n- path: guests/m.wasm\n  name:\n  config: null\n  workers: ~\n  labelSelector: ''\n  limits:\ncsiDrivers:\nresync:\n")
	m := f.Modules[0]
	require.Equal(t, "m", m.Name)
	require.Nil(t, m.Config)
	require.Equal(t, config.DefaultWorkers, m.Workers)
	require.True(t, m.LabelSelector.Empty())
	require.Equal(t, config.DefaultResync, f.Resync)
}

// TestLoadMergeKeys checks that modules can share settings through an
// anchor and a merge key, with the fields written in the module winning.
func TestLoadMergeKeys(t *testing.T) {
	f := mustLoad(t, `modules:
- &first
  path: guests/m.wasm
  mode: shadow
  workers: 4
  limits: {memory: 32Mi}
- <<: *first
  path: guests/n.wasm
  workers: 1
`)
	n := f.Modules[1]
	require.Equal(t, "n", n.Name)
	require.Equal(t, config.ModeShadow, n.Mode)
	require.Equal(t, 1, n.Workers)
	require.Equal(t, uint64(32<<20), n.Limits.MemoryBytes)
}

// TestLoadResolvesPaths checks where relative module paths and the file's
// own path point.
func TestLoadResolvesPaths(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		// An absolute module path is kept as is.
		"etc/kubeplug/host.yaml": "modules:\n- path: ../../wasm/a.wasm\n- path: b.wasm\n- path: " +
			filepath.Join(dir, "elsewhere", "c.wasm") + "\n",
		"etc/kubeplug/b.wasm": "b",
		"wasm/a.wasm":         "a",
		"elsewhere/c.wasm":    "c",
	})
	hostYAML := filepath.Join(dir, "etc", "kubeplug", "host.yaml")

	// Relative to the configuration's directory, not to the working
	// directory, even when the configuration is named relatively.
	t.Chdir(filepath.Join(dir, "elsewhere"))
	f, err := config.Load(filepath.Join("..", "etc", "kubeplug", "host.yaml"))
	require.NoError(t, err)
	require.Equal(t, hostYAML, f.Path)
	require.Equal(t, filepath.Join(dir, "wasm", "a.wasm"), f.Modules[0].Path)
	require.Equal(t, filepath.Join(dir, "etc", "kubeplug", "b.wasm"), f.Modules[1].Path)
	require.Equal(t, filepath.Join(dir, "elsewhere", "c.wasm"), f.Modules[2].Path)
	for _, m := range f.Modules {
		require.True(t, filepath.IsAbs(m.Path), m.Path)
	}
}

// TestLoadModulesDir: with Options.ModulesDir, the image's module paths
// (/modules/NAME) name the files of the modules directory, given from the
// working directory; other paths are read as written, and a missing module
// names both paths.
func TestLoadModulesDir(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"deploy/host.yaml": "modules:\n- path: /modules/a.wasm\n- path: b.wasm\n- path: /modulesx/c.wasm\n",
		"deploy/b.wasm":    "b",
		"build/a.wasm":     "a",
	})
	t.Chdir(dir)
	_, err := config.Load("deploy/host.yaml")
	require.ErrorContains(t, err, "module file /modules/a.wasm does not exist", "without the option, the image's path")

	_, err = config.LoadWith("deploy/host.yaml", config.Options{ModulesDir: "build"})
	require.ErrorContains(t, err, "modules[2].path: module file /modulesx/c.wasm does not exist", "only /modules/ is the image's")
	require.NotContains(t, err.Error(), "modules[0]")

	writeFiles(t, dir, map[string]string{"deploy/host.yaml": "modules:\n- path: /modules/a.wasm\n- path: b.wasm\n- path: /modules/gone.wasm\n"})
	_, err = config.LoadWith("deploy/host.yaml", config.Options{ModulesDir: "build"})
	require.ErrorContains(t, err, "modules[2].path: the image's /modules/gone.wasm, read from the modules directory as "+
		filepath.Join(dir, "build", "gone.wasm")+" does not exist; build the modules (make guests)")

	writeFiles(t, dir, map[string]string{"deploy/host.yaml": "modules:\n- path: /modules/a.wasm\n- path: b.wasm\n"})
	f, err := config.LoadWith("deploy/host.yaml", config.Options{ModulesDir: "build"})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "build", "a.wasm"), f.Modules[0].Path)
	require.Equal(t, "a", f.Modules[0].Name, "named as in the image")
	require.Equal(t, filepath.Join(dir, "deploy", "b.wasm"), f.Modules[1].Path)
}

// TestParseWithoutPath checks that Parse resolves against the working
// directory when given no file name, and says so in messages.
func TestParseWithoutPath(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, modules)
	t.Chdir(dir)
	f, err := config.Parse([]byte("modules:\n- path: guests/m.wasm\n"), "")
	require.NoError(t, err)
	require.Empty(t, f.Path)
	require.Equal(t, filepath.Join(dir, "guests", "m.wasm"), f.Modules[0].Path)

	_, err = config.Parse([]byte("modules: []\n"), "")
	require.ErrorContains(t, err, "host configuration:1: modules: names no modules")
}
