package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/bench/workload"
	"github.com/kubeplug/kubeplug/host/runtime"
)

func volume(name string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolume",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"capacity":                      map[string]any{"storage": "1Gi"},
			"persistentVolumeReclaimPolicy": "Delete",
			"csi":                           map[string]any{"driver": "hostpath.csi.k8s.io", "volumeHandle": name},
		},
	}
}

// BenchmarkSwap measures a hot swap of each reference module, from the
// module file changed to the first reconcile served by the new generation:
// Reload (read the configuration and the file, compile, validate, start one
// instance, swap) and then one reconcile. The file watcher's debounce
// (ReloadDebounce) comes on top in `kubeplug run`.
//
// warm: the new bytes were compiled before (a swap back to a version the
// host ran, or a restart with a cache directory), so the compilation cache
// answers. cold: a new engine with an empty cache for every swap, so the
// module is compiled from scratch.
//
// The baseline, measured in the same process, is one reconcile of the same
// subject on the serving module: swap/reconcile says how many reconciles
// one swap costs.
func BenchmarkSwap(b *testing.B) {
	for _, tc := range []struct {
		dir, name, key string
		obj            map[string]any
	}{
		{"guests/retention", "retention", "default/web", set("default", "web")},
		{"guests/reclaim", "reclaim", "pv-1", volume("pv-1")},
	} {
		wasm := workload.Guest(b, tc.dir)
		for _, cache := range []string{"warm", "cold"} {
			b.Run(tc.name+"/"+cache, func(b *testing.B) {
				dir := b.TempDir()
				mod := filepath.Join(dir, tc.name+".wasm")
				require.NoError(b, os.WriteFile(mod, variant(wasm, 0), 0o644))
				h := newTestHost(b, fmt.Sprintf("modules:\n- path: %s\n  name: %s\n%s", mod, tc.name, allow[tc.dir]), tc.obj)
				reconcile := func() {
					if out := h.r.fleet.get(tc.name).Reconcile(context.Background(), tc.key); out.Err != nil {
						b.Fatal(out.Err)
					}
				}
				cur := 0
				if cache == "warm" {
					// Compile the second variant once, so that both are
					// in the cache.
					require.NoError(b, os.WriteFile(mod, variant(wasm, 1), 0o644))
					h.r.Reload("bench")
					cur = 1
				}
				reconcile()
				// testing.Benchmark cannot run inside a benchmark: time a
				// fixed loop instead, at least 20 reconciles and 200 ms.
				start, n := time.Now(), 0
				for n < 20 || time.Since(start) < 200*time.Millisecond {
					reconcile()
					n++
				}
				base := float64(time.Since(start).Nanoseconds()) / float64(n)
				b.ResetTimer()
				for b.Loop() {
					if cache == "cold" {
						b.StopTimer()
						e, err := runtime.NewEngine(context.Background(), runtime.Options{Logger: slog.New(slog.DiscardHandler)})
						require.NoError(b, err)
						b.Cleanup(func() { _ = e.Close(context.Background()) })
						h.r.engine = e
						b.StartTimer()
					}
					cur = 1 - cur
					require.NoError(b, os.WriteFile(mod, variant(wasm, cur), 0o644))
					before := h.r.fleet.get(tc.name).Generation()
					h.r.Reload("bench")
					if h.r.fleet.get(tc.name).Generation() == before {
						b.Fatal("the module was not swapped")
					}
					reconcile()
				}
				perSwap := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				b.ReportMetric(perSwap/1e6, "ms/swap")
				b.ReportMetric(perSwap/base, "swap/reconcile")
			})
		}
	}
}
