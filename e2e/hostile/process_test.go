package hostile

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// hostProc is a `kubeplug run` process started by testenv.StartHost, with
// when it started and its peak RSS sampled while it runs.
type hostProc struct {
	*testenv.Host
	start time.Time
	rss   *rssWatch
}

// startHost runs kubeplug run with the host configuration config against
// the control plane, and stops it (SIGTERM, then kill) when t ends.
func startHost(t *testing.T, config string) *hostProc {
	t.Helper()
	start := time.Now()
	host := testenv.StartHost(t, testenv.HostOptions{Kubeconfig: cp.Kubeconfig, Config: config, CacheDir: cacheDir})
	h := &hostProc{Host: host, start: start, rss: watchRSS(host.PID(), host.Done())}
	t.Cleanup(func() {
		if _, err := h.stop(syscall.SIGTERM, drainBound); err != nil {
			t.Errorf("host did not end cleanly: %v", err)
		}
	})
	return h
}

// drainBound bounds how long a host may take to end after SIGTERM: every
// guest call ends within its timeout (1s by default) and every API and CSI
// call of a reconcile is bounded, so reaching it means a hung host.
const drainBound = 30 * time.Second

func (h *hostProc) exited() bool { return h.Exited() }

// wait waits until the process ends, at most within; it reports whether it
// ended.
func (h *hostProc) wait(within time.Duration) bool {
	select {
	case <-h.Done():
		return true
	case <-time.After(within):
		return false
	}
}

// stop sends sig, waits up to within for the process to end, and kills it
// then. It returns the exit status (-1 when a signal ended it) and an error
// when the process had to be killed.
func (h *hostProc) stop(sig syscall.Signal, within time.Duration) (int, error) {
	begin := time.Now()
	_ = h.Stop(sig, within)
	if code := h.ExitCode(); code != -1 || time.Since(begin) < within {
		return code, nil
	}
	return -1, fmt.Errorf("still running %v after %v; killed", within, sig)
}

// exitCode is the status of the ended process, -1 when a signal ended it.
func (h *hostProc) exitCode() int { return h.ExitCode() }

// peakRSS is the process's peak resident set size in MiB, as last sampled.
func (h *hostProc) peakRSS() float64 { return h.rss.peak() }

// rssWatch samples a process's peak resident set size (VmHWM in
// /proc/PID/status) every 50ms while it runs. The rusage of the ended
// process would not do: the child is forked sharing this test process's
// memory, and Linux counts that (the control plane's) into its maxrss.
type rssWatch struct {
	mu  sync.Mutex
	kib int64
}

func watchRSS(pid int, done <-chan struct{}) *rssWatch {
	w := &rssWatch{}
	path := fmt.Sprintf("/proc/%d/status", pid)
	go func() {
		for {
			if b, err := os.ReadFile(path); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						var kib int64
						if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kib); err == nil {
							w.mu.Lock()
							w.kib = max(w.kib, kib)
							w.mu.Unlock()
						}
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *rssWatch) peak() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return float64(w.kib) / 1024
}

// get fetches path from the host's metrics and health server.
func (h *hostProc) get(path string) (int, string, error) { return h.Get(path) }

// scrape reads and parses /metrics.
func (h *hostProc) scrape() (testenv.Metrics, error) { return h.Scrape() }

// until polls cond every 200ms until it is true, or within passes; it
// reports whether cond became true. within bounds a hung test; reaching it
// is a failure the caller reports.
func until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tail is the end of a long text.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
