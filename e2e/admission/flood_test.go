package admission

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	corpus "github.com/kubeplug/kubeplug/host/runtime/hostile"
)

// The flood's sizes, bounded in count and time, on loopback only. The
// webhook server's defaults they run against: 256 connections, a 5 s header
// and handshake timeout, a 10 s read timeout, 7 MiB per body and 32 MiB of
// bodies in flight.
const (
	slowConns   = 400 // send a header, then a body byte a second
	silentConns = 1000
	bigConns    = 150 // each a body of 7 MiB - 1 byte, stalled before its end
	bigBody     = 7<<20 - 1
	// classBound bounds one class: reaching it means the server held a
	// connection it should have closed, not that it was slow.
	classBound = 60 * time.Second
)

// TestWebhookFloodAndCopyBomb runs, against one host serving the copy-bomb
// admit hook and reconciling examples/warnretain beside it, the patch copy
// bomb through the API server and then a flood of the webhook port: slow
// bodies, silent connections and big stalled bodies. Throughout, the host
// stays up, warnretain keeps reconciling and /metrics answers; admission
// answers degrade to the failure policy and come back once the flood is
// over; SIGTERM then ends the host within its drain bound. Each class logs
// its wall time and the host's peak RSS.
func TestWebhookFloodAndCopyBomb(t *testing.T) {
	ctx := context.Background()
	c := kubernetes.NewForConfigOrDie(cp.Config)
	bombNs, warnNs := testenv.Namespace(t, c), testenv.Namespace(t, c)

	dir := t.TempDir()
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	mods, err := corpus.AdmitGuests(bctx, "go", dir)
	if err != nil {
		t.Fatal(err)
	}
	var bomb string
	for _, m := range mods {
		if m.Class == "patch-copy-bomb" {
			bomb = filepath.Join(dir, m.Class+".wasm")
		}
	}
	warn := guest(t, "examples/warnretain")
	certDir, caFile := testenv.ServingCert(t)
	webhookAddr := testenv.FreeAddr(t)
	config := fmt.Sprintf(`resync: 2s
modules:
- name: warnretain
  path: %s
  namespaces: [%s]
%s- name: bomb
  path: %s
  namespaces: [%s]
  allow: [{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels]}]
  admission: {failurePolicy: Fail, timeout: 5s}
`, warn, warnNs, testenv.Allow["examples/warnretain"], bomb, bombNs)
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig, Config: config,
		Args: []string{"--webhook-addr", webhookAddr, "--webhook-cert-dir", certDir},
	})
	h.WaitReady(t)
	testenv.RegisterWebhooks(t, c, h.ConfigPath, webhookAddr, caFile)
	if _, err := c.AppsV1().StatefulSets(warnNs).Create(ctx, set("kept", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pid := h.PID()
	t.Logf("host started: peak RSS %.1f MiB", testenv.PeakRSSMiB(t, pid))

	// The host's own answer to the bomb: its failure policy, naming the
	// module and the limit.
	hostDenies := func() (bool, error) {
		_, err := c.CoreV1().PersistentVolumeClaims(bombNs).Create(ctx, claim("bombed"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "kubeplug module bomb failed and its failurePolicy Fail denies the request") &&
			strings.Contains(err.Error(), "work limit"), nil
	}
	reconciling := func(t *testing.T, what string) { keepsReconciling(t, h, "warnretain", what) }
	class := func(name string, flood func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			flood(t)
			if h.Exited() {
				t.Fatalf("the host exited during %s:\n%s", name, h.Log())
			}
			t.Logf("class %s: wall %v, host peak RSS %.1f MiB", name, time.Since(start).Round(time.Millisecond), testenv.PeakRSSMiB(t, pid))
			// Once the flood is over, the host answers reviews again.
			testenv.Eventually(t, wait, "the host's own answer after "+name, hostDenies)
		})
	}

	class("copy bomb", func(t *testing.T) {
		testenv.Eventually(t, wait, "the bomb's webhook to answer", hostDenies)
		_, err := c.CoreV1().PersistentVolumeClaims(bombNs).Create(ctx, claim("bombed"), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), `module "bomb"'s patch`) {
			t.Fatalf("create a claim under the copy bomb: %v, want the host's denial naming the module and the limit", err)
		}
		reconciling(t, "after the copy bomb")
	})

	class("slow bodies", func(t *testing.T) {
		var closed, taken atomic.Int64
		flood(t, webhookAddr, slowConns, func(raw net.Conn) {
			conn := served(raw)
			if conn == nil {
				return
			}
			taken.Add(1)
			fmt.Fprintf(conn, "POST /admit/bomb HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
			for {
				if _, err := conn.Write([]byte(" ")); err != nil {
					if !isTimeout(err) { // not the class's own bound
						closed.Add(1)
					}
					return
				}
				if closedWithin(conn, time.Second) {
					closed.Add(1)
					return
				}
			}
		}, func() { reconciling(t, "during slow bodies") })
		t.Logf("slow bodies: %d of %d connections served, %d of them closed by the host", taken.Load(), slowConns, closed.Load())
		if closed.Load() != taken.Load() {
			t.Errorf("%d slow-body connections were still open after %v", taken.Load()-closed.Load(), classBound)
		}
	})

	class("silent connections", func(t *testing.T) {
		flood(t, webhookAddr, silentConns, func(raw net.Conn) {
			_ = closedWithin(raw, 10*time.Second) // hold the connection, say nothing
		}, func() {
			reconciling(t, "during silent connections")
			// Admission degrades to the failure policy: the host's or
			// the API server's, a denial either way.
			_, err := c.CoreV1().PersistentVolumeClaims(bombNs).Create(ctx, claim("flooded"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil {
				t.Errorf("a claim was admitted during the flood; failurePolicy Fail must deny it")
			}
		})
	})

	class("big stalled bodies", func(t *testing.T) {
		var refused atomic.Int64
		flood(t, webhookAddr, bigConns, func(raw net.Conn) {
			conn := served(raw)
			if conn == nil {
				return
			}
			fmt.Fprintf(conn, "POST /admit/bomb HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", bigBody)
			answered := make(chan int, 1)
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					answered <- 0
					return
				}
				resp.Body.Close()
				answered <- resp.StatusCode
			}()
			chunk := make([]byte, 64<<10)
			for sent := 0; sent < bigBody-1; sent += len(chunk) {
				if _, err := conn.Write(chunk[:min(len(chunk), bigBody-1-sent)]); err != nil {
					break
				}
			}
			if code := <-answered; code == http.StatusTooManyRequests {
				refused.Add(1)
			}
		}, func() { reconciling(t, "during big stalled bodies") })
		t.Logf("big stalled bodies: %d of %d refused with 429 before their body was read", refused.Load(), bigConns)
		if refused.Load() < bigConns/2 {
			t.Errorf("only %d of %d big bodies were refused: the bytes in flight are not bounded", refused.Load(), bigConns)
		}
	})

	t.Run("SIGTERM ends the host", func(t *testing.T) {
		begin := time.Now()
		if err := h.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if code := h.ExitCode(); code != 0 {
			t.Fatalf("exit status %d after SIGTERM, want 0:\n%s", code, h.Log())
		}
		t.Logf("SIGTERM: the host ended after %v", time.Since(begin).Round(time.Millisecond))
	})
}

// flood opens n TCP connections to the webhook server at addr (loopback) at
// once, runs conn on each until it returns or classBound passes, calls
// during while they run, and closes them all.
func flood(t *testing.T, addr string, n int, conn func(net.Conn), during func()) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	stop := time.Now().Add(classBound)
	for range n {
		raw, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("dial the webhook port: %v", err)
		}
		_ = raw.SetDeadline(stop)
		mu.Lock()
		conns = append(conns, raw)
		mu.Unlock()
		wg.Go(func() { conn(raw) })
	}
	during()
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
}

// closedWithin reports whether the server closed conn within d.
func closedWithin(conn net.Conn, d time.Duration) bool {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	return !isTimeout(err)
}

// served is raw as a TLS client once the server has taken it and completed
// the handshake; nil when it never did (it waited in the backlog until the
// class ended).
func served(raw net.Conn) *tls.Conn {
	conn := tls.Client(raw, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a flood of loopback, not a client
	if conn.Handshake() != nil {
		return nil
	}
	return conn
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
