package scale

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

const driver = "scale.csi.kubeplug.dev"

// loader is a client without client-side throttling: the fleet loads as
// fast as the API server takes it.
func loader(t testing.TB) kubernetes.Interface {
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// spread picks n sets of f, evenly over its namespaces.
func spread(f Fleet, n int) []int {
	n = min(n, f.Sets)
	out := make([]int, n)
	for j := range out {
		out[j] = j * f.Sets / n
	}
	return out
}

// TestScale is the scale scenario at N=300, for make test: the host
// converges (reconciles every subject once, with no write: the fleet is
// already as the modules want it), writes nothing over two resyncs, and
// handles a scale-down of 10 sets at once. It asserts no times.
func TestScale(t *testing.T) {
	ctx := context.Background()
	client := loader(t)
	f := Fleet{Run: "t300", Sets: 300, PerNamespace: 100, Driver: driver}
	_, err := f.Load(ctx, client, 16)
	must(t, err)
	want, err := count(ctx, client)
	must(t, err)

	h, cs := startHost(t, testenv.HostOptions{Kubeconfig: cp.Kubeconfig, Config: hostConfig(t, driver, 5*time.Second, "")}, want, testenv.Timeout)
	zero(t, cs.writes, "a converged fleet costs no write at start")
	zero(t, steadyWrites(t, h, want, testenv.Timeout), "two resyncs of a converged fleet cost no write")

	got := latencies(t, client, f, spread(f, 10), testenv.Timeout)
	if len(got) != 10 {
		t.Fatalf("%d condemned claims owned by their pod, want 10", len(got))
	}
	m, err := h.Scrape()
	must(t, err)
	zero(t, m.Sum("kubeplug_reconciles_total", "result", "error"), "no reconcile failed")
}

// BenchmarkScale measures one host at N=$SCALE_N sets (default 1000)
// against the informerset reference, and prints a row of BENCHMARKS.md's
// table. It runs once whatever b.N: run it with -benchtime 1x, as make
// bench-scale does. The host's CPU profile over two resyncs and its heap
// profile after convergence are kept under $SCALE_PROFILES/scale-N (default
// the temporary directory), and their top entries printed.
func BenchmarkScale(b *testing.B) {
	n := 1000
	if s := os.Getenv("SCALE_N"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		if err != nil {
			b.Fatalf("SCALE_N=%q: want a number of StatefulSets, e.g. 10000", s)
		}
	}
	// The host's tuning for a scale-down of many sets at once (see
	// BENCHMARKS.md): concurrent reconciles per module, and the client's
	// request rate.
	workers, qps := "16", "200"
	if s := os.Getenv("SCALE_WORKERS"); s != "" {
		workers = s
	}
	if s := os.Getenv("SCALE_QPS"); s != "" {
		qps = s
	}
	// SCALE_GOMEMLIMIT is the host's soft memory limit (Go's GOMEMLIMIT),
	// as a deployment would set it from the container's memory limit.
	var env []string
	if s := os.Getenv("SCALE_GOMEMLIMIT"); s != "" {
		env = []string{"GOMEMLIMIT=" + s}
	}
	dir, err := profileDir(n)
	must(b, err)
	ctx := context.Background()
	client := loader(b)
	f := Fleet{Run: "bench", Sets: n, PerNamespace: 250, Driver: driver}

	start := time.Now()
	requests, err := f.Load(ctx, client, 32)
	must(b, err)
	load := time.Since(start)
	want, err := count(ctx, client)
	must(b, err)

	refSynced, refRSS := reference(b)

	// SCALE_RESYNC is the host's resync period: short, so that two
	// resyncs fit in a run, but a pass at N=10,000 takes about as long as
	// 30s, so a scale-down then always meets one (see BENCHMARKS.md).
	resync := 30 * time.Second
	if s := os.Getenv("SCALE_RESYNC"); s != "" {
		if resync, err = time.ParseDuration(s); err != nil {
			b.Fatalf("SCALE_RESYNC=%q: want a duration, e.g. 90s", s)
		}
	}
	timeout := 10 * time.Minute
	cfg := strings.ReplaceAll(hostConfig(b, driver, resync, "apiQPS: "+qps+"\n"), "\n  name: ", "\n  workers: "+workers+"\n  name: ")
	h, cs := startHost(b, testenv.HostOptions{Kubeconfig: cp.Kubeconfig, Config: cfg, CacheDir: compiled(b), Env: env, Args: []string{"--profiles"}}, want, timeout)
	zero(b, cs.writes, "a converged fleet costs no write at start")
	loaded := lastLogTime(h.Log(), `msg="loaded module"`).Sub(cs.start)
	m, err := h.Scrape()
	must(b, err)
	heap := m.Sum("go_memstats_heap_inuse_bytes")
	heapFile, cpuFile := filepath.Join(dir, "heap.pprof"), filepath.Join(dir, "cpu.pprof")
	must(b, fetchProfile(h.Addr, "/debug/pprof/heap?gc=1", heapFile, time.Minute))

	// The CPU profile covers at least one whole resync of every subject.
	profiled := make(chan error, 1)
	go func() {
		profiled <- fetchProfile(h.Addr, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(resync.Seconds())+15), cpuFile, timeout)
	}()
	steady := steadyWrites(b, h, want, timeout)
	must(b, <-profiled)
	share, err := guestShare(cpuFile)
	must(b, err)

	m, err = h.Scrape()
	must(b, err)
	before := retentionSeconds(m)
	lat := latencies(b, client, f, spread(f, 100), timeout)
	p50, p99, worst := quantile(lat, .50), quantile(lat, .99), quantile(lat, 1)
	m, err = h.Scrape()
	must(b, err)
	after := retentionSeconds(m)
	rss, err := testenv.PeakRSS(h.PID())
	must(b, err)

	b.ReportMetric(cs.reconciled.Seconds(), "coldstart-s")
	b.ReportMetric(float64(rss)/(1<<20), "peakRSS-MiB")
	b.ReportMetric(steady, "steady-writes")
	b.ReportMetric(float64(p99.Milliseconds()), "p99-ms")
	fmt.Printf("host tuning: workers %s per module, apiQPS %s, resync %s, environment %v\n", workers, qps, resync, env)
	fmt.Printf("N=%d: %d objects loaded in %.1fs (%d requests, %.0f/s)\n", n, want.objects(), load.Seconds(), requests, float64(requests)/load.Seconds())
	fmt.Printf("reference: synced %.2fs, peak RSS %.0f MiB\n", refSynced.Seconds(), mib(refRSS))
	fmt.Printf("host: modules loaded %.2fs, synced %.2fs, all reconciled %.2fs, peak RSS %.0f MiB, heap in use %.0f MiB (%.0f B/object); "+
		"writes at start %.0f, during two resyncs %.0f; scale-down of %d sets p50 %s p99 %s max %s "+
		"(retention: %.0f reconciles, mean %.1f ms); guest share of CPU samples over two resyncs %.1f%%\n",
		loaded.Seconds(), cs.synced.Seconds(), cs.reconciled.Seconds(), mib(rss), heap/(1<<20), heap/float64(want.objects()),
		cs.writes, steady, len(lat), p50, p99, worst,
		after.count-before.count, 1000*(after.sum-before.sum)/max(1, after.count-before.count), share)
	for _, p := range []struct{ file, sample string }{{cpuFile, ""}, {heapFile, "-sample_index=inuse_space"}} {
		flags := []string{"-nodecount=15"}
		if p.sample != "" {
			flags = append(flags, p.sample)
		}
		out, err := top(p.file, 22, flags...)
		must(b, err)
		fmt.Printf("%s:\n%s\n", p.file, out)
	}
	fmt.Printf("| %d | %d | %.0fs | %.1fs (%.1f×) | %.1fs | %.0f MiB (%.1f×) | %.0f | %.0f | %d / %d / %d ms | %.0f%% |\n",
		n, want.objects(), load.Seconds(),
		cs.synced.Seconds(), cs.synced.Seconds()/refSynced.Seconds(),
		cs.reconciled.Seconds(),
		mib(rss), float64(rss)/float64(refRSS),
		heap/float64(want.objects()), steady,
		p50.Milliseconds(), p99.Milliseconds(), worst.Milliseconds(),
		share)
}

// compiled returns a module cache directory that holds the modules compiled,
// as a host restarted with its default --cache-dir finds it: the cold start
// measured is the caches', not the compiler's.
func compiled(t testing.TB) string {
	t.Helper()
	bin, err := testenv.Kubeplug()
	must(t, err)
	dir := t.TempDir()
	for _, m := range modules {
		wasm, err := testenv.Guest(m.dir)
		must(t, err)
		if out, err := exec.Command(bin, "inspect", "--cache-dir", dir, wasm).CombinedOutput(); err != nil {
			t.Fatalf("kubeplug inspect %s: %v\n%s", wasm, err, out)
		}
	}
	return dir
}

// histogram is a histogram's count and sum.
type histogram struct{ count, sum float64 }

// retentionSeconds is retention's reconcile duration histogram.
func retentionSeconds(m testenv.Metrics) histogram {
	var h histogram
	f, ok := m["kubeplug_reconcile_duration_seconds"]
	if !ok {
		return h
	}
	for _, x := range f.Metric {
		for _, l := range x.Label {
			if l.GetName() == "module" && l.GetValue() == "retention" {
				h.count += float64(x.GetHistogram().GetSampleCount())
				h.sum += x.GetHistogram().GetSampleSum()
			}
		}
	}
	return h
}

// lastLogTime is the time= of the last line of the host's log that holds
// what, or the zero time.
func lastLogTime(log, what string) time.Time {
	var t time.Time
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, what) {
			continue
		}
		v, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		if parsed, err := time.Parse(time.RFC3339Nano, v); err == nil {
			t = parsed
		}
	}
	return t
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func zero(t testing.TB, got float64, what string) {
	t.Helper()
	if got != 0 {
		t.Fatalf("%s: got %v", what, got)
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
