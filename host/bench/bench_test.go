package bench_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/bench/workload"
	_ "github.com/kubeplug/kubeplug/internal/benchpolicy" // registers the native baseline
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// replicas is the fixed workload: one StatefulSet, this many pods and claims.
const replicas = 100

// benchGuest is the guest the benchmarks load.
const benchGuest = "internal/benchpolicy/guest"

// wantActions is what benchpolicy answers for the workload: an owner
// reference on every claim and one event.
const wantActions = replicas + 1

func checkResult(tb testing.TB, res *abi.Result) {
	tb.Helper()
	if len(res.Actions) != wantActions {
		tb.Fatalf("module returned %d actions, want %d", len(res.Actions), wantActions)
	}
}

// BenchmarkReconcileStatefulSet100 is the reconcile budget's workload: host
// encode, guest decode/decide/encode, host decode, deadline on. It
// reports the ratio to the native run of the same code as x-native.
func BenchmarkReconcileStatefulSet100(b *testing.B) {
	ctx := context.Background()
	req := workload.StatefulSet(b, replicas)
	m := workload.Load(b, benchGuest)
	native := workload.NativeNsPerOp(b, []*abi.ReconcileRequest{req}, checkResult)
	b.ResetTimer()
	for b.Loop() {
		res, err := m.Reconcile(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		checkResult(b, res)
	}
	b.StopTimer()
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(native, "native-ns/op")
	b.ReportMetric(perOp/native, "x-native")
}

// BenchmarkReconcileStatefulSet100Native is the baseline on its own (make
// pgo profiles it for the guest's default.pgo).
func BenchmarkReconcileStatefulSet100Native(b *testing.B) {
	workload.Native(b, []*abi.ReconcileRequest{workload.StatefulSet(b, replicas)}, checkResult)
}

// TestWorkload keeps the benchmark honest in `make test`: the wasm module and
// the native run give the same answer for the workload.
func TestWorkload(t *testing.T) {
	ctx := context.Background()
	req := workload.StatefulSet(t, replicas)
	m := workload.Load(t, benchGuest)
	wasm, err := m.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	native, err := sdktest.New(t).Reconcile(req)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, wasm)
	require.Equal(t, native, wasm, "the compiled module and the native run must answer alike")
}

// BenchmarkReconcileEmpty is the smallest round trip through an SDK-built
// module: a request with no objects (the module answers with no action),
// codec included, deadline on.
func BenchmarkReconcileEmpty(b *testing.B) {
	ctx := context.Background()
	m := workload.Load(b, benchGuest)
	req := &abi.ReconcileRequest{Subject: abi.SubjectStatefulSet, Key: "default/web", Now: "2026-01-01T00:00:00Z"}
	for b.Loop() {
		res, err := m.Reconcile(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Actions) != 0 {
			b.Fatalf("module returned %d actions, want none", len(res.Actions))
		}
	}
}
