package oci

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// drainBound bounds how long the host may take to end after SIGTERM: every
// guest call and API call is bounded, and so is every pull, which SIGTERM
// cancels; reaching it means a wedged host.
const drainBound = 30 * time.Second

// TestStalledRegistryDuringReload: the registry of one module's image
// stops answering while the host runs. Reloads (a changed module file, then
// SIGHUP) go on: the file module is swapped in and reconciles, /metrics
// answers, the image's pull fails at --image-timeout and is counted while
// its module keeps serving its first generation, and SIGTERM ends the host
// within the drain bound although the registry still holds a request.
func TestStalledRegistryDuringReload(t *testing.T) {
	start := time.Now()
	var stall atomic.Bool
	var held atomic.Int64
	release := make(chan struct{})
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stall.Load() {
			held.Add(1)
			select { // accept the request and never answer
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	host := strings.TrimPrefix(srv.URL, "http://")

	protect, err := testenv.Guest("e2e/guests/protect")
	if err != nil {
		t.Fatal(err)
	}
	swapver, err := testenv.Guest("e2e/guests/swapver")
	if err != nil {
		t.Fatal(err)
	}
	image := host + "/policies/protect:stable"
	kubeplug(t, "push", "--plain-http", protect, image)

	dir := t.TempDir()
	file := filepath.Join(dir, "swapver.wasm")
	first, err := os.ReadFile(swapver)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, first, 0o644); err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, cp.Client())
	config := fmt.Sprintf("modules:\n- path: %s\n  name: filemod\n  namespaces: [%s]\n  allow: []\n- image: %s\n  name: imgmod\n  plainHTTP: true\n  namespaces: [%s]\n%s",
		file, ns, image, ns, protectAllow)
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig,
		Config:     config,
		Args:       []string{"--image-cache-dir", t.TempDir(), "--image-timeout", "5s"},
	})
	h.WaitReady(t)
	metric := func(name string, match ...string) bool {
		m, err := h.Scrape()
		return err == nil && m.Has(name, match...)
	}
	if !metric("kubeplug_module_info", "module", "imgmod", "generation", "1") {
		t.Fatalf("the image's module does not run; log:\n%s", h.Log())
	}

	// The registry stalls; the module file changes (a new custom
	// section: other bytes, the same module), and the host is sent SIGHUP.
	stall.Store(true)
	if err := os.WriteFile(file+".tmp", variant(first, "2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.Timeout, "the changed module file swapped in while the registry stalls", func() (bool, error) {
		return metric("kubeplug_module_info", "module", "filemod", "generation", "2"), nil
	})
	failed := func(n float64) func() (bool, error) {
		return func() (bool, error) {
			m, err := h.Scrape()
			if err != nil {
				return false, err
			}
			return m.Sum("kubeplug_module_swaps_total", "module", "imgmod", "result", "failed") >= n, nil
		}
	}
	testenv.Eventually(t, testenv.Timeout, "the image's pull to fail at its timeout and be counted", failed(1))
	if err := syscall.Kill(h.PID(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.Timeout, "the pull of the SIGHUP's reload to fail too", failed(2))
	if held.Load() == 0 {
		t.Fatal("the registry held no request: the test stalled nothing")
	}
	if !strings.Contains(h.Log(), "registry timed out") {
		t.Errorf("the host's log does not say the registry timed out:\n%s", h.Log())
	}
	if !metric("kubeplug_module_info", "module", "imgmod", "generation", "1") {
		t.Errorf("the image's module does not serve on as generation 1")
	}

	// The file module still reconciles, and so does the image's module
	// it had (protect adds its finalizer to the set's claims).
	createSet(t, ns, "web", 1)
	testenv.Eventually(t, testenv.Timeout, "the file module to reconcile the new set", func() (bool, error) {
		m, err := h.Scrape()
		if err != nil {
			return false, err
		}
		return m.Sum("kubeplug_reconciles_total", "module", "filemod") > 0, nil
	})
	testenv.Eventually(t, testenv.Timeout, "the image's module to protect the claim", func() (bool, error) {
		return protected(t, ns) == 1, nil
	})
	removeFinalizers(t, ns)

	// One more reload whose pull the registry holds when SIGTERM comes.
	before := held.Load()
	if err := syscall.Kill(h.PID(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.Timeout, "the next pull to reach the stalled registry", func() (bool, error) {
		return held.Load() > before, nil
	})
	rss := testenv.PeakRSSMiB(t, h.PID())
	stopAt := time.Now()
	if err := h.Stop(syscall.SIGTERM, drainBound); err != nil {
		t.Fatalf("the host did not end cleanly on SIGTERM within %s: %v\n%s", drainBound, err, h.Log())
	}
	t.Logf("stalled registry during reload: wall %s (SIGTERM to exit %s), host peak RSS %.1f MiB (VmHWM)",
		time.Since(start).Round(time.Millisecond), time.Since(stopAt).Round(time.Millisecond), rss)
}

// variant returns wasm with a custom section holding tag appended: the
// same module, other bytes.
func variant(wasm []byte, tag string) []byte {
	name := "kubeplug-e2e-variant"
	body := append([]byte{byte(len(name))}, name...)
	body = append(body, tag...)
	out := append([]byte{}, wasm...)
	out = append(out, 0, byte(len(body)))
	return append(out, body...)
}

// TestSignedPinnedImageOffline: a host that ran a signed image pinned by
// digest starts again with the registry gone, from its image cache: the
// manifest, the module and the signature bundle that verified, verified
// again with the configured key.
func TestSignedPinnedImageOffline(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true))
	srv := httptest.NewServer(reg)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	signKey, pubKey := keyPair(t, dir, "cosign")
	protect, err := testenv.Guest("e2e/guests/protect")
	if err != nil {
		t.Fatal(err)
	}
	kubeplug(t, "push", "--plain-http", "--sign-key", signKey, protect, host+"/policies/protect:1.0.0")
	req, err := http.NewRequest(http.MethodHead, srv.URL+"/v2/policies/protect/manifests/1.0.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	digest := resp.Header.Get("Docker-Content-Digest")
	if !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("the registry gave no digest for the pushed tag (%s)", resp.Status)
	}
	config := fmt.Sprintf("modules:\n- image: %s/policies/protect@%s\n  name: protect\n  plainHTTP: true\n  signature: {publicKey: %s}\n%s",
		host, digest, pubKey, protectAllow)
	cache := t.TempDir()
	start := func() *testenv.Host {
		h := testenv.StartHost(t, testenv.HostOptions{Kubeconfig: cp.Kubeconfig, Config: config, Args: []string{"--image-cache-dir", cache}})
		h.WaitReady(t)
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		if !m.Has("kubeplug_module_info", "module", "protect") {
			t.Fatalf("the image's module does not run; log:\n%s", h.Log())
		}
		return h
	}
	if err := start().Stop(syscall.SIGTERM, drainBound); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	h := start()
	if strings.Contains(h.Log(), "level=WARN") || strings.Contains(h.Log(), "level=ERROR") {
		t.Errorf("the offline start warned:\n%s", h.Log())
	}
}
