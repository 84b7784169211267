// Package templateupdate benchmarks the templateupdate module: one reconcile
// of a 100-replica StatefulSet with a VolumeClaimUpdate (InPlace, LockStep,
// every claim needing expansion) through the compiled module, against the
// same code run natively in the same process.
package templateupdate_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	_ "github.com/kubeplug/kubeplug/guests/templateupdate/policy" // registers the native baseline
	"github.com/kubeplug/kubeplug/host/bench/workload"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

const (
	replicas = 100
	guest    = "guests/templateupdate"
)

// check: the first reconcile holds the partition above the highest replica
// with its record on the set, shows it in the status, says so, and grows that
// replica's claim only: LockStep goes one replica at a time, yet the module
// still reads all 100 replicas to count them, find the hold and check that
// every replica is available.
func check(tb testing.TB, res *abi.Result) {
	tb.Helper()
	want := []string{abi.ActionSetPartition, abi.ActionUpdateClaimUpdateStatus, abi.ActionEvent, abi.ActionApplyClaim, abi.ActionEvent}
	if len(res.Actions) != len(want) {
		tb.Fatalf("module returned %d actions, want %d", len(res.Actions), len(want))
	}
	for i, a := range res.Actions {
		if a.Type != want[i] {
			tb.Fatalf("action %d is %s, want %s", i, a.Type, want[i])
		}
	}
	st := res.Actions[1].ClaimUpdateStatus
	if *res.Actions[0].Partition != replicas || res.Actions[0].Hold == nil || st.HeldPartition == nil || *st.HeldPartition != replicas ||
		len(st.VolumeClaimTemplates) != 1 || st.VolumeClaimTemplates[0].CompatibleReplicas != 0 ||
		st.VolumeClaimTemplates[0].TotalCapacity["storage"] != "1000Gi" {
		tb.Fatalf("unexpected hold or status: partition %d, hold %+v, status %+v", *res.Actions[0].Partition, res.Actions[0].Hold, st)
	}
	if a := res.Actions[3]; a.Target.Name != "data-web-99" || a.Claim.Resources.Requests["storage"] != "20Gi" {
		tb.Fatalf("unexpected apply %+v", a)
	}
}

// BenchmarkTemplateupdate100 reports ns per reconcile of the module
// compiled to wasm (deadline on) and x-native, its ratio to the native run.
func BenchmarkTemplateupdate100(b *testing.B) {
	ctx := context.Background()
	req := workload.ClaimUpdate(b, replicas)
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

// BenchmarkTemplateupdate100Native is the native baseline on its own (make
// pgo profiles it for the guest's default.pgo).
func BenchmarkTemplateupdate100Native(b *testing.B) {
	workload.Native(b, []*abi.ReconcileRequest{workload.ClaimUpdate(b, replicas)}, check)
}

// TestWorkload keeps the benchmark honest in `make test`: compiled and
// native give the same answer.
func TestWorkload(t *testing.T) {
	req := workload.ClaimUpdate(t, replicas)
	wasm, err := workload.Load(t, guest).Reconcile(context.Background(), req)
	require.NoError(t, err)
	native, err := sdktest.New(t).Reconcile(req)
	require.NoError(t, err)
	check(t, wasm)
	require.Equal(t, native, wasm)
}
