package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/host/runtime/hostile"
	"github.com/kubeplug/kubeplug/host/runtime/internal/checkpoint"
)

// BenchmarkReconcileEmpty is the round trip of an empty request with the
// deadline on: encode, malloc, write, call, check, decode. "go" is a stock
// Go guest (its own export and decode costs included); "raw" is a guest with
// no runtime at all, so it measures the host's share.
func BenchmarkReconcileEmpty(b *testing.B) {
	ctx := context.Background()
	for _, g := range []struct {
		name string
		wasm func(testing.TB) []byte
	}{
		{"go", func(tb testing.TB) []byte { return guest(tb, "good") }},
		{"raw", func(testing.TB) []byte { return rawGuest(nil).Bytes() }},
	} {
		b.Run(g.name, func(b *testing.B) {
			m, err := newEngine(b, runtime.Options{}).Load(ctx, g.name+".wasm", g.wasm(b), runtime.Limits{})
			require.NoError(b, err)
			req := &abi.ReconcileRequest{}
			_, err = m.Reconcile(ctx, req)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Reconcile(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoadCached loads a module whose compiled code is already cached:
// "file" in the cache directory (as after a restart), "memory" because the
// same bytes are loaded already (as during a hot swap). Both include
// starting the first instance and reading the manifest.
func BenchmarkLoadCached(b *testing.B) {
	ctx := context.Background()
	wasm := guest(b, "good")
	dir := b.TempDir()
	_, err := newEngine(b, runtime.Options{CacheDir: dir}).Load(ctx, "good.wasm", wasm, runtime.Limits{})
	require.NoError(b, err)

	b.Run("file", func(b *testing.B) {
		eng := newEngine(b, runtime.Options{CacheDir: dir})
		for b.Loop() {
			m, err := eng.Load(ctx, "good.wasm", wasm, runtime.Limits{})
			if err != nil {
				b.Fatal(err)
			}
			_ = m.Close(ctx)
		}
	})
	b.Run("memory", func(b *testing.B) {
		eng := newEngine(b, runtime.Options{CacheDir: b.TempDir()})
		_, err := eng.Load(ctx, "good.wasm", wasm, runtime.Limits{})
		require.NoError(b, err)
		for b.Loop() {
			m, err := eng.Load(ctx, "good.wasm", wasm, runtime.Limits{})
			if err != nil {
				b.Fatal(err)
			}
			_ = m.Close(ctx)
		}
	})
}

// BenchmarkInstanceStart is what replacing an instance costs: instantiate
// and _initialize a stock Go guest.
func BenchmarkInstanceStart(b *testing.B) {
	ctx := context.Background()
	m := load(b, "good", runtime.Limits{}, runtime.Options{})
	for b.Loop() {
		if err := m.StartInstanceForTest(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInstrument is the checkpoint rewrite of a stock Go guest (4 MB),
// which every Load does before it looks in the compilation cache.
func BenchmarkInstrument(b *testing.B) {
	wasm := guest(b, "good")
	b.SetBytes(int64(len(wasm)))
	for b.Loop() {
		if _, err := checkpoint.Insert(wasm, checkpoint.Import{Module: "m", Name: "n"}, 1000); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExtismDeadline is what enforcing the deadline costs an Extism
// plugin's own code: a plugin that loops 10 million times per call, with
// the checkpoints the host inserts, and with go-sdk's way (wazero's
// close-on-context-done, which checks for the context at every loop head
// and function entry). x-checkpoints is the ratio to the first, timed in
// the same process just before.
func BenchmarkExtismDeadline(b *testing.B) {
	ctx := context.Background()
	wasm := hostile.ExtismSpinning([]byte(`{"status":0}`), 10_000_000)
	req := &abi.ReconcileRequest{}
	loadWith := func(b *testing.B, closeOnDone bool) runtime.Loaded {
		if closeOnDone {
			defer runtime.SetExtismCloseOnDoneForTest()()
		}
		m, err := newEngine(b, runtime.Options{CacheDir: b.TempDir()}).LoadAny(ctx, "spin.wasm", wasm, runtime.Limits{Deadline: time.Minute})
		require.NoError(b, err)
		return m
	}
	timed := func(m runtime.Loaded) float64 {
		start, n := time.Now(), 0
		for n < 3 || time.Since(start) < 500*time.Millisecond {
			if _, err := m.Reconcile(ctx, req); err != nil {
				b.Fatal(err)
			}
			n++
		}
		return float64(time.Since(start).Nanoseconds()) / float64(n)
	}
	for _, closeOnDone := range []bool{false, true} {
		name := "checkpoints"
		if closeOnDone {
			name = "close-on-done"
		}
		b.Run(name, func(b *testing.B) {
			base := timed(loadWith(b, false))
			m := loadWith(b, closeOnDone)
			b.ResetTimer()
			for b.Loop() {
				if _, err := m.Reconcile(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/base, "x-checkpoints")
		})
	}
}

// BenchmarkExtismCall is the fixed cost of a call to an Extism plugin that
// answers at once: "go-sdk" is go-sdk's CallWithContext alone (its kernel
// calls, input copy in and output copy out), "host" the whole reconcile of
// an empty request through the runtime (encode, pool, call, checks,
// decode), on the same plugin.
func BenchmarkExtismCall(b *testing.B) {
	ctx := context.Background()
	m, err := newEngine(b, runtime.Options{}).LoadAny(ctx, "answer.wasm", hostile.ExtismAnswering([]byte(`{"status":0}`)), runtime.Limits{})
	require.NoError(b, err)
	b.Run("go-sdk", func(b *testing.B) {
		call, closeInst, err := runtime.ExtismCallForTest(ctx, m.(*runtime.Plugin), "reconcile") // abi's hook table: the reconcile hook's Extism function
		require.NoError(b, err)
		defer closeInst()
		in := []byte(`{}`)
		b.ReportAllocs()
		for b.Loop() {
			if err := call(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("host", func(b *testing.B) {
		req := &abi.ReconcileRequest{}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Reconcile(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
