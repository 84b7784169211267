package scale

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

// The modules every scenario runs, by their names in the host's metrics.
var modules = []struct{ name, dir, subject string }{
	{"retention", "guests/retention", "statefulset"},
	{"reclaim", "guests/reclaim", "persistentvolume"},
	{"warnretain", "examples/warnretain", "statefulset"},
}

// hostConfig is the host.yaml of a scenario's host: the three modules, the
// fleet's CSI driver (served, so that the host's probe of it at start finds
// it answering, and never asked to delete: no volume is deleted) and
// resync.
func hostConfig(t testing.TB, driver string, resync time.Duration, extra string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(extra)
	b.WriteString("modules:\n")
	for _, m := range modules {
		wasm, err := testenv.Guest(m.dir)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "- path: %s\n  name: %s\n%s", wasm, m.name, testenv.Allow[m.dir])
	}
	sock := filepath.Join(t.TempDir(), "csi.sock")
	stop, err := csitest.New(driver).Serve(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	fmt.Fprintf(&b, "csiDrivers:\n- name: %s\n  endpoint: unix://%s\n", driver, sock)
	fmt.Fprintf(&b, "resync: %s\n", resync)
	return b.String()
}

// census counts what a host watching everything caches, and its subjects.
type census struct {
	sets, pods, claims, volumes, classes int
}

func (c census) objects() int { return c.sets + c.pods + c.claims + c.volumes + c.classes }

// subjects is how many subjects module m has.
func (c census) subjects(subject string) int {
	if subject == "persistentvolume" {
		return c.volumes
	}
	return c.sets
}

func count(ctx context.Context, client kubernetes.Interface) (census, error) {
	var c census
	var err error
	pages := func(list func(metav1.ListOptions) (int, string, error)) int {
		n, opts := 0, metav1.ListOptions{Limit: 5000}
		for err == nil {
			var got int
			got, opts.Continue, err = list(opts)
			n += got
			if opts.Continue == "" {
				break
			}
		}
		return n
	}
	c.sets = pages(func(o metav1.ListOptions) (int, string, error) {
		l, err := client.AppsV1().StatefulSets("").List(ctx, o)
		if err != nil {
			return 0, "", err
		}
		return len(l.Items), l.Continue, nil
	})
	c.pods = pages(func(o metav1.ListOptions) (int, string, error) {
		l, err := client.CoreV1().Pods("").List(ctx, o)
		if err != nil {
			return 0, "", err
		}
		return len(l.Items), l.Continue, nil
	})
	c.claims = pages(func(o metav1.ListOptions) (int, string, error) {
		l, err := client.CoreV1().PersistentVolumeClaims("").List(ctx, o)
		if err != nil {
			return 0, "", err
		}
		return len(l.Items), l.Continue, nil
	})
	c.volumes = pages(func(o metav1.ListOptions) (int, string, error) {
		l, err := client.CoreV1().PersistentVolumes().List(ctx, o)
		if err != nil {
			return 0, "", err
		}
		return len(l.Items), l.Continue, nil
	})
	c.classes = pages(func(o metav1.ListOptions) (int, string, error) {
		l, err := client.StorageV1().StorageClasses().List(ctx, o)
		if err != nil {
			return 0, "", err
		}
		return len(l.Items), l.Continue, nil
	})
	return c, err
}

// poll calls cond every interval until it returns true, and fails t when
// it returns an error or timeout (a hung test, not a performance bound)
// passes.
func poll(t testing.TB, interval, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %v", what, timeout)
		}
		time.Sleep(interval)
	}
}

// coldStart is what a host's start costs.
type coldStart struct {
	start              time.Time // just before the process started
	synced, reconciled time.Duration
	writes             float64
}

// startHost starts h's process and measures, from just before the process
// starts, when its caches have synced (/readyz) and when every module has
// reconciled each of its subjects at least once with nothing left queued.
func startHost(t testing.TB, o testenv.HostOptions, want census, timeout time.Duration) (*testenv.Host, coldStart) {
	t.Helper()
	cs := coldStart{start: time.Now()}
	start := cs.start
	h := testenv.StartHost(t, o)
	poll(t, 20*time.Millisecond, timeout, h.Name+" ready", func() (bool, error) {
		if h.Exited() {
			return false, fmt.Errorf("%s exited:\n%s", h.Name, h.Log())
		}
		code, _, err := h.Get("/readyz")
		return err == nil && code == http.StatusOK, nil
	})
	cs.synced = time.Since(start)
	poll(t, 50*time.Millisecond, timeout, h.Name+" reconciling every subject once", func() (bool, error) {
		m, err := h.Scrape()
		if err != nil {
			return false, err
		}
		if h.Exited() {
			return false, fmt.Errorf("%s exited:\n%s", h.Name, h.Log())
		}
		return reconciledAll(m, want, nil), nil
	})
	cs.reconciled = time.Since(start)
	m, err := h.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	cs.writes = m.Writes()
	return h, cs
}

// reconciledAll reports whether every module has reconciled at least as many
// times as it has subjects beyond the counts in since (nil: since start),
// with no key left in its queue.
func reconciledAll(m testenv.Metrics, want census, since map[string]float64) bool {
	for _, mod := range modules {
		if m.Sum("kubeplug_reconciles_total", "module", mod.name) < since[mod.name]+float64(want.subjects(mod.subject)) {
			return false
		}
		if m.Sum("kubeplug_queue_depth", "module", mod.name) != 0 {
			return false
		}
	}
	return true
}

// reconciles returns each module's reconcile count.
func reconciles(m testenv.Metrics) map[string]float64 {
	out := map[string]float64{}
	for _, mod := range modules {
		out[mod.name] = m.Sum("kubeplug_reconciles_total", "module", mod.name)
	}
	return out
}

// steadyWrites waits until every module has reconciled every subject twice
// more (two resyncs) and returns the writes h made meanwhile.
func steadyWrites(t testing.TB, h *testenv.Host, want census, timeout time.Duration) float64 {
	t.Helper()
	m, err := h.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	before, since := m.Writes(), reconciles(m)
	for k := range since {
		since[k] += float64(want.subjects(subjectOf(k)))
	}
	poll(t, 200*time.Millisecond, timeout, h.Name+" resyncing twice", func() (bool, error) {
		m, err = h.Scrape()
		return err == nil && reconciledAll(m, want, since), err
	})
	return m.Writes() - before
}

func subjectOf(module string) string {
	for _, m := range modules {
		if m.name == module {
			return m.subject
		}
	}
	return ""
}

// latencies scales sets (index into f) down by one replica at once, and
// returns, per set, the time from its scale-down request to the moment a
// watch sees its condemned claim owned by the condemned pod: retention's
// owner-reference write for whenScaled: Delete.
func latencies(t testing.TB, client kubernetes.Interface, f Fleet, sets []int, timeout time.Duration) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	list, err := client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, err := client.CoreV1().PersistentVolumeClaims("").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	condemned := map[string]int{} // "ns/claim" -> index in sets
	for j, i := range sets {
		ns, name := f.Set(i)
		condemned[ns+"/"+claimName(name, Replicas-1)] = j
	}
	scaled := make([]time.Time, len(sets))
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(sets))
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, Replicas-1))
	for j, i := range sets {
		wg.Go(func() {
			ns, name := f.Set(i)
			mu.Lock()
			scaled[j] = time.Now()
			mu.Unlock()
			if _, err := client.AppsV1().StatefulSets(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				errs <- fmt.Errorf("scale %s/%s down: %w", ns, name, err)
			}
		})
	}
	out := make([]time.Duration, len(sets))
	seen := 0
	for seen < len(sets) {
		select {
		case err := <-errs:
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatalf("saw %d of %d condemned claims owned by their pod: %v", seen, len(sets), ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("claim watch ended")
			}
			c, isClaim := ev.Object.(*corev1.PersistentVolumeClaim)
			if !isClaim || ev.Type != watch.Modified {
				continue
			}
			j, ok := condemned[c.Namespace+"/"+c.Name]
			if !ok || out[j] != 0 || !ownedByPod(c) {
				continue
			}
			now := time.Now()
			mu.Lock()
			out[j] = now.Sub(scaled[j])
			mu.Unlock()
			seen++
		}
	}
	wg.Wait()
	return out
}

func ownedByPod(c *corev1.PersistentVolumeClaim) bool {
	for _, r := range c.OwnerReferences {
		if r.Kind == "Pod" && r.APIVersion == "v1" {
			return true
		}
	}
	return false
}

// quantile is the q-quantile of ds (nearest rank), sorting ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	slices.Sort(ds)
	i := int(q*float64(len(ds))+0.999999) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// reference runs the informerset reference against the same API server and
// returns its time to synced caches and its peak RSS.
func reference(t testing.TB) (time.Duration, uint64) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "informerset")
	build := exec.Command("go", "build", "-o", bin, "./informerset")
	build.Dir = filepath.Join(testenv.Root(), "e2e", "scale")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build informerset: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--kubeconfig", cp.Kubeconfig)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "synced" {
		t.Fatalf("informerset: %q, %v", line, err)
	}
	synced := time.Since(start)
	rss, err := testenv.PeakRSS(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return synced, rss
}
