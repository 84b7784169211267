// Package reclaim benchmarks the reclaim module: reconciles per second over
// 10,000 PersistentVolumes through the compiled module, against the same
// code run natively in the same process.
package reclaim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	_ "github.com/kubeplug/kubeplug/guests/reclaim/policy" // registers the native baseline
	"github.com/kubeplug/kubeplug/host/bench/workload"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

const (
	volumes = 10000
	guest   = "guests/reclaim"
)

// check accepts any well-formed result; TestWorkload checks the mix.
func check(testing.TB, *abi.Result) {}

// BenchmarkReclaim10000 makes one op a pass over 10,000 volumes and reports
// reconciles/s through the compiled module (one instance, deadline on)
// and x-native, the ratio of its time to the native run's.
func BenchmarkReclaim10000(b *testing.B) {
	ctx := context.Background()
	reqs := workload.Volumes(b, volumes)
	m := workload.Load(b, guest)
	native := workload.NativeNsPerOp(b, reqs, check)
	b.ResetTimer()
	for b.Loop() {
		for _, req := range reqs {
			if _, err := m.Reconcile(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(volumes/(perOp/1e9), "reconciles/s")
	b.ReportMetric(volumes/(native/1e9), "native-reconciles/s")
	b.ReportMetric(perOp/native, "x-native")
}

// BenchmarkReclaim10000Native is the native baseline on its own (make pgo
// profiles it for the guest's default.pgo).
func BenchmarkReclaim10000Native(b *testing.B) {
	workload.Native(b, workload.Volumes(b, volumes), check)
}

// TestWorkload: compiled and native answer alike over the whole workload,
// and the module does what the workload is built for: deletes the released
// tenth, protects the tenth without a finalizer, leaves the rest.
func TestWorkload(t *testing.T) {
	const n = 1000 // the same mix as the benchmark's, smaller for make test
	reqs := workload.Volumes(t, n)
	m := workload.Load(t, guest)
	h := sdktest.New(t)
	counts := map[string]int{}
	for _, req := range reqs {
		wasm, err := m.Reconcile(context.Background(), req)
		require.NoError(t, err)
		native, err := h.Reconcile(req)
		require.NoError(t, err)
		require.Equal(t, native, wasm, req.Key)
		for _, a := range wasm.Actions {
			counts[a.Type]++
		}
	}
	require.Equal(t, n/10, counts[abi.ActionDeleteVolume], "one DeleteVolume per released volume")
	require.Equal(t, n/10, counts[abi.ActionAddFinalizer], "one finalizer per bound volume without it")
}
