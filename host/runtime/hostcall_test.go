package runtime_test

import (
	"context"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/host/runtime/hostile"
)

// An Extism plugin that logs 24 MiB blocks costs the host what it logs, not
// what it names: eight blocks (192 MiB, within the call's host-work budget)
// make the host allocate a few KiB each, the message read up to the log
// limit and no further. go-sdk's own log functions copy each block whole,
// twice (384 MiB for this call).
func TestExtismLogReadsAtMostTheLimit(t *testing.T) {
	sink := &logSink{}
	eng := newEngine(t, runtime.Options{Logger: sink.logger()})
	p, err := eng.LoadAny(context.Background(), "log-huge.wasm", hostile.ExtismLogHuge(8), runtime.Limits{Instances: 1, MemoryBytes: 32 << 20})
	require.NoError(t, err)
	defer p.Close(context.Background())

	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	_, err = p.Reconcile(context.Background(), request("default/web"))
	goruntime.ReadMemStats(&after)
	require.NoError(t, err)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("the call allocated %d KiB on the host's heap", allocated>>10)
	require.Less(t, allocated, uint64(16<<20), "the host copied the blocks")

	logged := 0
	for _, r := range sink.all() {
		if r.Attrs["truncated"] == true {
			require.Len(t, r.Message, 4096)
			logged++
		}
	}
	require.Equal(t, 8, logged, "each block is logged, cut at the limit")
}
