package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeplug/kubeplug/host/bench/workload"
	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/memcluster"
	"github.com/kubeplug/kubeplug/host/metrics"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// These tests run the Reloader in process, on memcluster, which has no
// informers: controllers are wired to nothing and called directly. The
// end-to-end test e2e/swap runs it in `kubeplug run` on a real API server.

// noInformers is a controller.Informers without informers.
type noInformers struct{ *memcluster.Cluster }

func (noInformers) Informer(string) cache.SharedIndexInformer { return nil }

// allow grants the reference modules what their manifests ask.
var allow = map[string]string{
	"guests/retention":    "  allow: [{action: updateOwnerReferences, resources: [persistentvolumeclaims]}, {action: event, resources: [statefulsets]}, {action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/ownerReferences]}]\n",
	"guests/reclaim":      "  allow: [{action: addFinalizer, resources: [persistentvolumes]}, {action: removeFinalizer, resources: [persistentvolumes]}, {action: deleteObject, resources: [persistentvolumes]}, {action: deleteVolume}, {action: event, resources: [persistentvolumes]}]\n",
	"examples/warnretain": "  allow: [{action: event, resources: [statefulsets]}]\n",
}

// testHost is a Reloader over memcluster with its configuration in a
// directory of its own.
type testHost struct {
	dir string
	r   *Reloader
	m   *metrics.Metrics
	c   *memcluster.Cluster
}

func newTestHost(tb testing.TB, yaml string, objs ...map[string]any) *testHost {
	tb.Helper()
	dir := tb.TempDir()
	path := filepath.Join(dir, "host.yaml")
	require.NoError(tb, os.WriteFile(path, []byte(yaml), 0o644))
	c := memcluster.New(memcluster.Config{})
	require.NoError(tb, c.Load(objs...))
	engine, err := runtime.NewEngine(context.Background(), runtime.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = engine.Close(context.Background()) })
	m := metrics.New()
	log := slog.New(slog.DiscardHandler)
	r := &Reloader{path: path, engine: engine, m: m, log: log, host: hostObject(), ctx: context.Background(),
		applied: map[string]*appliedEntry{},
		deps:    controller.Deps{Lister: c, Cluster: c, Metrics: m, Logger: log},
		fleet:   newFleet(noInformers{c}, log)}
	file, err := config.Load(path)
	require.NoError(tb, err)
	mods, err := r.loadAll(file)
	require.NoError(tb, err)
	require.NoError(tb, r.start(file, mods))
	return &testHost{dir: dir, r: r, m: m, c: c}
}

// newWarnHost is a test host running the warnretain example from a file
// of its own, mod, as the entry "warn" (entry, its YAML), on a cluster with
// the StatefulSet default/web; wasm is the module's bytes.
func newWarnHost(t *testing.T) (h *testHost, mod string, wasm []byte, entry string) {
	t.Helper()
	wasm = workload.Guest(t, "examples/warnretain")
	mod = filepath.Join(t.TempDir(), "warn.wasm")
	require.NoError(t, os.WriteFile(mod, wasm, 0o644))
	entry = fmt.Sprintf("modules:\n- path: %s\n  name: warn\n%s", mod, allow["examples/warnretain"])
	return newTestHost(t, entry, set("default", "web")), mod, wasm, entry
}

// write puts data at name in the host's directory by a rename.
func (h *testHost) write(tb testing.TB, name string, data []byte) string {
	tb.Helper()
	p := filepath.Join(h.dir, name)
	require.NoError(tb, os.WriteFile(p+".tmp", data, 0o644))
	require.NoError(tb, os.Rename(p+".tmp", p))
	return p
}

// variant returns wasm with a custom section holding n appended: the same
// module, other bytes, another sha256.
func variant(wasm []byte, n int) []byte {
	name := "kubeplug-variant"
	payload := fmt.Sprint(n)
	body := append([]byte{byte(len(name))}, name...)
	body = append(body, payload...)
	out := append([]byte{}, wasm...)
	out = append(out, 0, byte(len(body)))
	return append(out, body...)
}

func set(ns, name string) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{
			"replicas":             int64(1),
			"selector":             map[string]any{"matchLabels": map[string]any{"app": name}},
			"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"}}},
		},
	}
}

// TestReload: a changed module file is swapped in as a new generation; a
// broken one leaves the old one serving and is counted and recorded; an
// entry added starts a controller and one removed stops it; a
// configuration that does not validate changes nothing.
func TestReload(t *testing.T) {
	h, mod, wasm, entry := newWarnHost(t)
	info := func(module, gen string) bool { return hasSeries(t, h.m, module, gen) }
	require.True(t, info("warn", "1"))
	require.Equal(t, 2, testutil.CollectAndCount(h.m.ModuleSwaps), "a module's swaps are counted from 0, before the first")
	reconcile := func(name string) controller.Outcome {
		ctrl := h.r.fleet.get(name)
		require.NotNil(t, ctrl, "controller %s", name)
		return ctrl.Reconcile(context.Background(), "default/web")
	}
	require.NoError(t, reconcile("warn").Err)

	t.Run("changed module swapped", func(t *testing.T) {
		require.NoError(t, os.WriteFile(mod, variant(wasm, 1), 0o644))
		h.r.Reload("test")
		require.True(t, info("warn", "2"))
		require.Equal(t, uint64(2), h.r.fleet.get("warn").Generation())
		require.NoError(t, reconcile("warn").Err)
		require.Equal(t, 1.0, testutil.ToFloat64(h.m.ModuleSwaps.WithLabelValues("warn", "success")))
	})
	t.Run("unchanged module kept", func(t *testing.T) {
		h.r.Reload("test")
		require.Equal(t, uint64(2), h.r.fleet.get("warn").Generation())
	})
	t.Run("changed entry swapped", func(t *testing.T) {
		h.write(t, "host.yaml", []byte(entry+"  config: {ignoreNamespaces: [default]}\n"))
		h.r.Reload("test")
		require.Equal(t, uint64(3), h.r.fleet.get("warn").Generation())
		out := reconcile("warn")
		require.NoError(t, out.Err)
		require.Empty(t, out.Actions, "the new entry's config ignores default")
		h.write(t, "host.yaml", []byte(entry))
		h.r.Reload("test")
		require.Equal(t, uint64(4), h.r.fleet.get("warn").Generation())
		require.NotEmpty(t, reconcile("warn").Actions)
	})
	t.Run("broken module refused", func(t *testing.T) {
		require.NoError(t, os.WriteFile(mod, []byte("not wasm"), 0o644))
		h.r.Reload("test")
		require.Equal(t, uint64(4), h.r.fleet.get("warn").Generation())
		require.NoError(t, reconcile("warn").Err, "the old module serves")
		require.Equal(t, 1.0, testutil.ToFloat64(h.m.ModuleSwaps.WithLabelValues("warn", "failed")))
		var found bool
		for _, e := range h.c.Events() {
			found = found || e.Reason == ReasonModuleRejected
		}
		require.True(t, found, "a Warning event says why")
		require.NoError(t, os.WriteFile(mod, variant(wasm, 1), 0o644))
	})
	t.Run("module asking beyond allow refused", func(t *testing.T) {
		h.write(t, "host.yaml", []byte(fmt.Sprintf("modules:\n- path: %s\n  name: warn\n  allow: []\n", mod)))
		h.r.Reload("test")
		require.Equal(t, uint64(4), h.r.fleet.get("warn").Generation(), "the old module serves")
		require.Equal(t, 2.0, testutil.ToFloat64(h.m.ModuleSwaps.WithLabelValues("warn", "failed")))
		h.write(t, "host.yaml", []byte(entry))
	})
	t.Run("invalid configuration changes nothing", func(t *testing.T) {
		h.write(t, "host.yaml", []byte("modules: [{path: "+mod+", bogus: 1}]\n"))
		h.r.Reload("test")
		require.Equal(t, 1.0, testutil.ToFloat64(h.m.ConfigReloads.WithLabelValues("failed")))
		require.Zero(t, testutil.ToFloat64(h.m.ConfigLastReloadSuccessful), "until a reload succeeds")
		require.NotNil(t, h.r.fleet.get("warn"))
	})
	t.Run("entries added and removed", func(t *testing.T) {
		other := filepath.Join(filepath.Dir(mod), "other.wasm")
		require.NoError(t, os.WriteFile(other, wasm, 0o644))
		h.write(t, "host.yaml", []byte(fmt.Sprintf("modules:\n- path: %s\n  name: other\n%s", other, allow["examples/warnretain"])))
		h.r.Reload("test")
		require.Nil(t, h.r.fleet.get("warn"), "removed")
		require.False(t, hasSeries(t, h.m, "warn", ""))
		require.NoError(t, reconcile("other").Err)
		require.True(t, info("other", "1"))
		require.Equal(t, 1.0, testutil.ToFloat64(h.m.ConfigLastReloadSuccessful))
	})
}

// hasSeries reports whether kubeplug_module_info has a series of module
// (and generation, unless empty).
func hasSeries(t testing.TB, m *metrics.Metrics, module, gen string) bool {
	mfs, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "kubeplug_module_info" {
			continue
		}
		for _, s := range mf.Metric {
			labels := map[string]string{}
			for _, l := range s.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["module"] == module && (gen == "" || labels["generation"] == gen) {
				return true
			}
		}
	}
	return false
}

// TestReloadShadow: an entry compared with another is attached to that
// module's controller, swapped in place when its file changes, follows a
// restarted controller, and detached when removed.
func TestReloadShadow(t *testing.T) {
	wasm := workload.Guest(t, "examples/warnretain")
	dir := t.TempDir()
	ref, cand := filepath.Join(dir, "ref.wasm"), filepath.Join(dir, "cand.wasm")
	require.NoError(t, os.WriteFile(ref, wasm, 0o644))
	require.NoError(t, os.WriteFile(cand, variant(wasm, 1), 0o644))
	refEntry := fmt.Sprintf("modules:\n- path: %s\n  name: ref\n%s", ref, allow["examples/warnretain"])
	candEntry := fmt.Sprintf("- path: %s\n  name: cand\n  mode: shadow\n  compareWith: ref\n", cand)
	h := newTestHost(t, refEntry+candEntry, set("default", "web"))
	agreed := func() float64 { return testutil.ToFloat64(h.m.ShadowAgreements.WithLabelValues("cand", "ref")) }
	reconcile := func() {
		require.NoError(t, h.r.fleet.get("ref").Reconcile(context.Background(), "default/web").Err)
	}
	require.Nil(t, h.r.fleet.get("cand"), "a compared module has no controller of its own")
	reconcile()
	require.Equal(t, 1.0, agreed())

	require.NoError(t, os.WriteFile(cand, variant(wasm, 2), 0o644))
	h.r.Reload("test")
	require.True(t, hasSeries(t, h.m, "cand", "2"))
	reconcile()
	require.Equal(t, 2.0, agreed())

	// Another number of workers restarts ref's controller: cand follows.
	h.write(t, "host.yaml", []byte(strings.Replace(refEntry, "name: ref\n", "name: ref\n  workers: 3\n", 1)+candEntry))
	h.r.Reload("test")
	require.True(t, hasSeries(t, h.m, "ref", "2"))
	reconcile()
	require.Equal(t, 3.0, agreed())

	h.write(t, "host.yaml", []byte(refEntry))
	h.r.Reload("test")
	require.False(t, hasSeries(t, h.m, "cand", ""))
	reconcile()
	require.Equal(t, 3.0, agreed(), "removed: compared no more")
}

// TestReloadPartlyApplied: a reload that changes csiDrivers, which take a
// restart, applies the rest of the file and is counted and reported as
// partly applied, not as a success; so is every later reload until the
// file agrees again with what the host started with.
func TestReloadPartlyApplied(t *testing.T) {
	h, _, _, entry := newWarnHost(t)
	reloads := func(result string) float64 { return testutil.ToFloat64(h.m.ConfigReloads.WithLabelValues(result)) }
	partlyApplied := func() []string {
		var msgs []string
		for _, e := range h.c.Events() {
			if e.Reason == ReasonConfigPartlyApplied {
				require.Equal(t, "Warning", e.Type)
				msgs = append(msgs, e.Message)
			}
		}
		return msgs
	}
	require.Zero(t, reloads("partial"), "the series is there from the start")

	drivers := "csiDrivers:\n- name: hostpath.csi.k8s.io\n  endpoint: /run/csi/hostpath.sock\n"
	h.write(t, "host.yaml", []byte(drivers+entry+"  config: {ignoreNamespaces: [default]}\n"))
	h.r.Reload("test")
	require.Equal(t, 1.0, reloads("partial"))
	require.Zero(t, reloads("success"), "a reload that leaves csiDrivers unapplied is no success")
	require.Equal(t, 1.0, testutil.ToFloat64(h.m.ConfigLastReloadSuccessful), "but it was applied, partly")
	require.Equal(t, uint64(2), h.r.fleet.get("warn").Generation(), "the module's new config is applied")
	msgs := partlyApplied()
	require.Len(t, msgs, 1)
	require.Contains(t, msgs[0], "csiDrivers changed and take a restart")

	h.r.Reload("test")
	require.Equal(t, 2.0, reloads("partial"), "the host still runs the drivers it started with")

	h.write(t, "host.yaml", []byte(entry))
	h.r.Reload("test")
	require.Equal(t, 1.0, reloads("success"), "back to what the host started with")
	require.Equal(t, 2.0, reloads("partial"))
}
