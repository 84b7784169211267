package workload

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	kpruntime "github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

var (
	mu     sync.Mutex
	builds = map[string][]byte{}
)

// root is the repository's root directory.
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Guest builds the guest main package at dir (relative to the repository
// root, e.g. "guests/retention") for wasip1, once per test binary.
func Guest(tb testing.TB, dir string) []byte {
	tb.Helper()
	return build(tb, dir, func(out string) [][]string {
		return [][]string{{"go", "build", "-buildmode=c-shared", "-o", out, "./" + dir}}
	})
}

// AssemblyScript builds the AssemblyScript Extism plugin at dir (relative to
// the repository root, e.g. "examples/warnretain-as") as make guests does
// (npm ci, then its build script), once per test binary.
func AssemblyScript(tb testing.TB, dir string) []byte {
	tb.Helper()
	return build(tb, dir, func(out string) [][]string {
		build := []string{"npm", "run", "--silent", "build", "--", "--outFile", out}
		if npmInstalled(filepath.Join(root(), dir)) {
			return [][]string{build}
		}
		return [][]string{{"npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"}, build}
	})
}

// npmInstalled reports whether dir's node_modules is what its lock file
// pins, as the Makefile decides it: installed after the lock last changed.
// npm ci would delete and install it again, under any other build reading
// it.
func npmInstalled(dir string) bool {
	installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if err != nil {
		return false
	}
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	return err == nil && installed.ModTime().After(lock.ModTime())
}

// build runs the commands that write the module at dir to out (Go commands
// in the repository root, others in dir), once per test binary, and
// returns the module's bytes.
func build(tb testing.TB, dir string, commands func(out string) [][]string) []byte {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if b, ok := builds[dir]; ok {
		return b
	}
	tmp, err := os.MkdirTemp("", "kubeplug-bench-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "module.wasm")
	for _, args := range commands(out) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = filepath.Join(root(), dir)
		if args[0] == "go" {
			cmd.Dir = root()
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("build %s: %s: %v\n%s", dir, args[:2], err, b)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	builds[dir] = b
	return b
}

// LoadAny loads wasm, a native module or an Extism plugin, into a new
// engine with default limits, as the host does.
func LoadAny(tb testing.TB, source string, wasm []byte) kpruntime.Loaded {
	tb.Helper()
	m, err := engine(tb).LoadAny(context.Background(), source, wasm, kpruntime.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// Load loads the guest at dir into a new engine with default limits
// (deadline on, as in production).
func Load(tb testing.TB, dir string) *kpruntime.Module {
	tb.Helper()
	m, err := engine(tb).Load(context.Background(), dir+".wasm", Guest(tb, dir), kpruntime.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// engine returns a new engine, closed when tb ends.
func engine(tb testing.TB) *kpruntime.Engine {
	tb.Helper()
	ctx := context.Background()
	e, err := kpruntime.NewEngine(ctx, kpruntime.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close(ctx) })
	return e
}

// NativeNsPerOp runs the module registered in this test binary natively
// (sdktest's harness: the SDK's dispatch and codec, no wasm) over reqs, one
// op being a pass over all of them, and returns ns per op: the baseline a
// wasm run is reported against. check sees every result. testing.Benchmark
// cannot run inside a benchmark, so it times a fixed loop itself: at least
// 3 passes and 500 ms.
func NativeNsPerOp(tb testing.TB, reqs []*abi.ReconcileRequest, check func(testing.TB, *abi.Result)) float64 {
	return NsPerOp(tb, sdktest.New(tb).Reconcile, reqs, check)
}

// NsPerOp is NativeNsPerOp through any reconcile: a loaded module's, to
// report two modules' ratio from one benchmark.
func NsPerOp(tb testing.TB, reconcile func(*abi.ReconcileRequest) (*abi.Result, error), reqs []*abi.ReconcileRequest, check func(testing.TB, *abi.Result)) float64 {
	start, n := time.Now(), 0
	for n < 3 || time.Since(start) < 500*time.Millisecond {
		for _, req := range reqs {
			res, err := reconcile(req)
			if err != nil {
				tb.Fatal(err)
			}
			check(tb, res)
		}
		n++
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// Must fails tb with what went wrong when err is not nil.
func Must(tb testing.TB, err error, what string, args ...any) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}

// Native runs reqs through the native harness once per op, checking every
// result: the native baseline on its own, and the CPU profile that make pgo
// turns into the module's default.pgo.
func Native(b *testing.B, reqs []*abi.ReconcileRequest, check func(testing.TB, *abi.Result)) {
	h := sdktest.New(b)
	for b.Loop() {
		for _, req := range reqs {
			res, err := h.Reconcile(req)
			if err != nil {
				b.Fatal(err)
			}
			check(b, res)
		}
	}
}
