// Package extism benchmarks the Extism path: warnretain's AssemblyScript
// twin (an Extism plugin, MessagePack messages, through go-sdk) against the Go
// module compiled to wasm and the same Go code run natively, on the same
// workloads in the same process, so that the ratios hold whatever else
// shares the machine.
package extism_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	_ "github.com/kubeplug/kubeplug/examples/warnretain/policy" // registers the native baseline
	"github.com/kubeplug/kubeplug/host/bench/workload"
	"github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

const replicas = 100

// workloads are the two fixed requests: an empty one (no subject: the
// module answers with nothing) and one StatefulSet with 100 pods and 100
// claims whose claims are kept (whenDeleted Retain), so that warnretain
// answers with its Warning event.
func workloads(tb testing.TB) map[string]*abi.ReconcileRequest {
	set := workload.StatefulSet(tb, replicas)
	set.StatefulSet.Set.Spec.PersistentVolumeClaimRetentionPolicy = &abi.StatefulSetPersistentVolumeClaimPolicy{WhenDeleted: "Retain", WhenScaled: "Delete"}
	long := workload.StatefulSet(tb, 3)
	long.StatefulSet.Set.Metadata.Namespace = "testextismpluginbesidegomodules-cx7dx"
	long.StatefulSet.Set.Metadata.UID = "f64626f8-5521-43c7-903e-4f195ac1dc26"
	long.StatefulSet.Set.Spec.PersistentVolumeClaimRetentionPolicy = set.StatefulSet.Set.Spec.PersistentVolumeClaimRetentionPolicy
	return map[string]*abi.ReconcileRequest{
		"empty":  {Subject: abi.SubjectStatefulSet, Key: "default/web", Now: "2026-01-01T00:00:00Z"},
		"set100": set,
		// A long key and namespace (MessagePack str8), as a live
		// cluster's generated namespaces have them.
		"long-names": {Subject: abi.SubjectStatefulSet, Key: long.StatefulSet.Set.Metadata.Namespace + "/web", Now: "2026-01-01T00:00:00Z", StatefulSet: long.StatefulSet},
	}
}

// wantActions is warnretain's answer to each workload.
var wantActions = map[string]int{"empty": 0, "set100": 1, "long-names": 1}

func checker(name string) func(testing.TB, *abi.Result) {
	return func(tb testing.TB, res *abi.Result) {
		tb.Helper()
		if len(res.Actions) != wantActions[name] {
			tb.Fatalf("module returned %d actions for %s, want %d", len(res.Actions), name, wantActions[name])
		}
	}
}

// modules loads the two wasm builds of warnretain.
func modules(tb testing.TB) (goWasm, extism runtime.Loaded) {
	goWasm = workload.LoadAny(tb, "warnretain.wasm", workload.Guest(tb, "examples/warnretain"))
	extism = workload.LoadAny(tb, "warnretain-as.wasm", workload.AssemblyScript(tb, "examples/warnretain-as"))
	return goWasm, extism
}

// BenchmarkWarnretain reports ns per reconcile of each wasm build of
// warnretain (deadline on), x-native (its ratio to the Go code run
// natively) and, for the Extism plugin, x-go-wasm (its ratio to the Go
// module compiled to wasm), both baselines timed in the same process just
// before.
func BenchmarkWarnretain(b *testing.B) {
	ctx := context.Background()
	goWasm, extism := modules(b)
	for _, name := range []string{"empty", "set100"} {
		req, check := workloads(b)[name], checker(name)
		reqs := []*abi.ReconcileRequest{req}
		for _, m := range []struct {
			kind   string
			module runtime.Loaded
		}{{"go-wasm", goWasm}, {"extism", extism}} {
			b.Run(name+"/"+m.kind, func(b *testing.B) {
				native := workload.NativeNsPerOp(b, reqs, check)
				goNs := workload.NsPerOp(b, func(r *abi.ReconcileRequest) (*abi.Result, error) { return goWasm.Reconcile(ctx, r) }, reqs, check)
				b.ResetTimer()
				for b.Loop() {
					res, err := m.module.Reconcile(ctx, req)
					if err != nil {
						b.Fatal(err)
					}
					check(b, res)
				}
				b.StopTimer()
				perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				b.ReportMetric(native, "native-ns/op")
				b.ReportMetric(perOp/native, "x-native")
				b.ReportMetric(perOp/goNs, "x-go-wasm")
			})
		}
	}
}

// BenchmarkWarnretainPaired times the Extism plugin and the Go module as
// wasm call by call in turn on the same request, and reports x-go-wasm as
// the ratio of the two sums, with each one's ns per call. Load on a shared
// machine moves this ratio far less than BenchmarkWarnretain's, whose
// baseline is timed in a window of its own before the plugin's.
func BenchmarkWarnretainPaired(b *testing.B) {
	ctx := context.Background()
	goWasm, extism := modules(b)
	for _, name := range []string{"empty", "set100"} {
		req, check := workloads(b)[name], checker(name)
		b.Run(name, func(b *testing.B) {
			var goNs, extismNs time.Duration
			for b.Loop() {
				t0 := time.Now()
				goRes, goErr := goWasm.Reconcile(ctx, req)
				t1 := time.Now()
				res, err := extism.Reconcile(ctx, req)
				t2 := time.Now()
				goNs, extismNs = goNs+t1.Sub(t0), extismNs+t2.Sub(t1)
				if err = errors.Join(goErr, err); err != nil {
					b.Fatal(err)
				}
				check(b, goRes)
				check(b, res)
			}
			b.ReportMetric(float64(goNs.Nanoseconds())/float64(b.N), "go-wasm-ns/op")
			b.ReportMetric(float64(extismNs.Nanoseconds())/float64(b.N), "extism-ns/op")
			b.ReportMetric(float64(extismNs)/float64(goNs), "x-go-wasm")
		})
	}
}

// BenchmarkWarnretainNative is the native baseline of the set100 workload on
// its own (make pgo profiles it for the Go module's default.pgo).
func BenchmarkWarnretainNative(b *testing.B) {
	workload.Native(b, []*abi.ReconcileRequest{workloads(b)["set100"]}, checker("set100"))
}

// TestWorkload keeps the benchmark honest in `make test`: the Extism
// plugin, the Go module compiled to wasm and the native run answer each
// workload alike.
func TestWorkload(t *testing.T) {
	ctx := context.Background()
	goWasm, extism := modules(t)
	for name, req := range workloads(t) {
		t.Run(name, func(t *testing.T) {
			native, err := sdktest.New(t).Reconcile(req)
			require.NoError(t, err)
			checker(name)(t, native)
			for _, m := range []runtime.Loaded{goWasm, extism} {
				res, err := m.Reconcile(ctx, req)
				require.NoError(t, err)
				require.Equal(t, native, res)
				// The whole request too, as kubeplug test also sends it:
				// the plugin skips every value it does not read.
				whole, ok := m.(interface {
					ReconcileWhole(context.Context, *abi.ReconcileRequest) (*abi.Result, error)
				})
				require.True(t, ok)
				res, err = whole.ReconcileWhole(ctx, req)
				require.NoError(t, err)
				require.Equal(t, native, res)
			}
		})
	}
}
