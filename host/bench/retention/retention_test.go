// Package retention benchmarks the retention module: one reconcile of a
// 100-replica StatefulSet through the compiled module, against the same
// code run natively in the same process.
package retention_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	_ "github.com/kubeplug/kubeplug/guests/retention/policy" // registers the native baseline
	"github.com/kubeplug/kubeplug/host/bench/workload"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

const (
	replicas = 100
	guest    = "guests/retention"
)

// check: under Delete/Delete every in-range claim without references gets
// the StatefulSet as its controller: one action per claim.
func check(tb testing.TB, res *abi.Result) {
	tb.Helper()
	if len(res.Actions) != replicas {
		tb.Fatalf("module returned %d actions, want %d", len(res.Actions), replicas)
	}
	for _, a := range res.Actions {
		if a.Type != abi.ActionUpdateOwnerReferences || len(a.OwnerReferences.Add) != 1 || a.OwnerReferences.Add[0].Kind != "StatefulSet" {
			tb.Fatalf("unexpected action %+v", a)
		}
	}
}

// BenchmarkRetention100 reports ns per reconcile of the module compiled to
// wasm (deadline on) and x-native, its ratio to the native run.
func BenchmarkRetention100(b *testing.B) {
	ctx := context.Background()
	req := workload.StatefulSet(b, replicas)
	m := workload.Load(b, guest)
	native := workload.NativeNsPerOp(b, []*abi.ReconcileRequest{req}, check)
	b.ResetTimer()
	for b.Loop() {
		res, err := m.Reconcile(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		check(b, res)
	}
	b.StopTimer()
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(native, "native-ns/op")
	b.ReportMetric(perOp/native, "x-native")
}

// BenchmarkRetention100Native is the native baseline on its own (make pgo
// profiles it for the guest's default.pgo).
func BenchmarkRetention100Native(b *testing.B) {
	workload.Native(b, []*abi.ReconcileRequest{workload.StatefulSet(b, replicas)}, check)
}

// TestWorkload keeps the benchmark honest in `make test`: compiled and
// native give the same answer.
func TestWorkload(t *testing.T) {
	req := workload.StatefulSet(t, replicas)
	wasm, err := workload.Load(t, guest).Reconcile(context.Background(), req)
	require.NoError(t, err)
	native, err := sdktest.New(t).Reconcile(req)
	require.NoError(t, err)
	check(t, wasm)
	require.Equal(t, native, wasm)
}
