package bench_test

import (
	"context"
	"testing"

	"github.com/kubeplug/kubeplug/host/bench/workload"
)

// longLivedCalls is how many reconciles one instance serves in
// TestLongLivedInstance: several times the 1,100-1,800 after which a
// stock-Go guest under a clock that advances per read ran out of memory.
const longLivedCalls = 10_000

// TestLongLivedInstance reconciles the benchmark's workload (1 set + 100 pods
// + 100 claims) longLivedCalls times, one call after another, so that one
// instance serves them all: every call must succeed and the instance must
// never be replaced. A guest whose collector cannot keep up grows its heap
// until the memory cap and fails a call (clock.go in package runtime).
func TestLongLivedInstance(t *testing.T) {
	ctx := context.Background()
	req := workload.StatefulSet(t, replicas)
	m := workload.Load(t, benchGuest)
	res, err := m.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res)
	first := m.Stats()
	for i := 1; i < longLivedCalls; i++ {
		res, err := m.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("call %d of %d on one instance: %v", i+1, longLivedCalls, err)
		}
		checkResult(t, res)
	}
	if st := m.Stats(); st.Created != first.Created || st.Discarded != 0 {
		t.Fatalf("instances created %d, discarded %d after %d calls; want %d and 0: the instance was replaced",
			st.Created, st.Discarded, longLivedCalls, first.Created)
	}
}
