package runtime_test

import (
	"context"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/runtime"
	wb "github.com/kubeplug/kubeplug/host/runtime/internal/wasmbuild"
)

// codeHeavy is a module of many functions of straight-line arithmetic,
// which compiles to about 2 MB of machine code, and exports nothing, so a
// load compiles it and then refuses it (no ABI version marker). seed makes
// each one's bytes, and so its compiled code, its own.
func codeHeavy(seed int32) []byte {
	var body []byte
	for i := range int32(2000) {
		body = append(body, wb.Cat(wb.Op(wb.OpLocalGet, 0), wb.I32Const(seed+i), []byte{wb.OpI32Add}, wb.Op(wb.OpLocalSet, 0))...)
	}
	body = append(body, wb.Op(wb.OpLocalGet, 0)...)
	m := wb.Module{}
	for range 60 {
		m.Funcs = append(m.Funcs, wb.Func{Params: []byte{wb.I32}, Results: []byte{wb.I32}, Body: body})
	}
	return m.Bytes()
}

// rssBytes is the process's resident set, after the garbage it can give
// back is given back.
func rssBytes(t *testing.T) int64 {
	t.Helper()
	goruntime.GC()
	goruntime.GC() // finalizers of the first free the code the second collects
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// TestRefusedModulesReleaseTheirCode loads modules that compile and are then
// refused, each of its own bytes, into one engine: the code compiled for
// each is released with it, so the process does not grow with the number
// of modules it refused (or swapped out) but stays near what one costs.
func TestRefusedModulesReleaseTheirCode(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx, runtime.Options{})
	require.NoError(t, err)
	defer e.Close(ctx)
	load := func(seed int32) {
		_, err := e.Load(ctx, "heavy.wasm", codeHeavy(seed), runtime.Limits{})
		require.ErrorIs(t, err, runtime.ErrMissingExport)
	}
	load(0)
	before := rssBytes(t)
	const n = 12
	for i := range int32(n) {
		load((i + 1) * 100_000)
	}
	grown := rssBytes(t) - before
	t.Logf("%d modules of %d bytes loaded and refused: resident set grew by %d MB", n, len(codeHeavy(0)), grown>>20)
	// Measured: 0-1 MB; 21 MB when the compiled code is kept.
	require.Less(t, grown, int64(8<<20), "the code compiled for refused modules is kept")
}
