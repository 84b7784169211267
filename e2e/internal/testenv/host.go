package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/e2e/internal/portlease"
)

// Host is a `kubeplug run` process.
type Host struct {
	// Addr is the metrics and health address (127.0.0.1:port).
	Addr string
	// ProbeAddr is the address of the health probes alone
	// (--health-probe-bind-address).
	ProbeAddr string
	// Name tells hosts apart in logs.
	Name string
	// ConfigPath is the host configuration file, which a test may rewrite
	// to reload the host.
	ConfigPath string

	cmd  *exec.Cmd
	log  *SyncBuffer
	done chan struct{}
	err  error
	cg   *memcg // nil: no memory cgroup
}

// HostOptions start a host.
type HostOptions struct {
	// Name tells hosts apart in logs; default "host".
	Name string
	// Kubeconfig reaches the API server.
	Kubeconfig string
	// Config is the host configuration's YAML; module paths should be
	// absolute.
	Config string
	// CacheDir keeps compiled modules; default a directory shared by the
	// test binary.
	CacheDir string
	// Args are extra flags of kubeplug run.
	Args []string
	// InCluster, when not nil, runs the host as a pod runs it, with the
	// in-cluster configuration instead of Kubeconfig.
	InCluster *InCluster
	// Env is added to the host's environment (e.g. GOMEMLIMIT=800MiB).
	Env []string
	// MemoryLimit, when set, runs the host as a container runtime runs it
	// under resources.limits.memory: in a memory cgroup of its own with
	// this limit in bytes, which the kernel enforces by killing it, and
	// with GOMEMLIMIT at 80% of it, as deploy/ and the chart set it. Where
	// the machine gives the test no cgroup to make, the host runs without
	// the kernel's limit: Host.MemoryLimited says which, and a test then
	// holds the host's peak RSS to the limit itself.
	MemoryLimit int64
}

// InCluster is what a pod of a service account finds: the API server's
// address in KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, and the
// account's token, the cluster's CA and the pod's namespace in files under
// /var/run/secrets/kubernetes.io/serviceaccount, where client-go's
// in-cluster configuration reads them. POD_NAMESPACE is set too, as the
// downward API of deploy/'s manifests would set it.
//
// client-go reads those files at that fixed path, so the host runs in a
// mount namespace of its own (unshare(1), which needs CAP_SYS_ADMIN: the
// tests run as root) where a tmpfs over /var/run holds them. Nothing
// outside the host's process sees them.
type InCluster struct {
	Host, Port string
	Token      string
	CA         []byte
	Namespace  string
}

// saDir is where a pod finds its service account's files.
const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// inClusterScript runs as sh -c's script with $1 the directory of the
// service account's files and the command after it: it puts the files at
// saDir in the new mount namespace and execs the command.
const inClusterScript = `set -e
mount -t tmpfs -o mode=0755 kubeplug-e2e /var/run
mkdir -p ` + saDir + `
cp "$1"/token "$1"/ca.crt "$1"/namespace ` + saDir + `/
shift
exec "$@"`

// command returns the command that runs the host binary bin with args
// (--kubeconfig excepted) as o asks, writing what it needs under dir.
func (o HostOptions) command(bin, dir string, args []string) (*exec.Cmd, error) {
	if o.InCluster == nil {
		return exec.Command(bin, append(args, "--kubeconfig", o.Kubeconfig)...), nil
	}
	ic := o.InCluster
	sa := filepath.Join(dir, "serviceaccount")
	if err := os.Mkdir(sa, 0o700); err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"token": []byte(ic.Token), "ca.crt": ic.CA, "namespace": []byte(ic.Namespace)} {
		if err := os.WriteFile(filepath.Join(sa, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return nil, fmt.Errorf("running the host in-cluster needs unshare(1) (util-linux): %w", err)
	}
	cmd := exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "--",
		"sh", "-c", inClusterScript, "sh", sa, bin}, args...)...)
	cmd.Env = append(os.Environ(),
		"KUBERNETES_SERVICE_HOST="+ic.Host,
		"KUBERNETES_SERVICE_PORT="+ic.Port,
		"POD_NAMESPACE="+ic.Namespace,
		// Nothing of the test runner's own kubeconfig: the host finds the
		// cluster as a pod does.
		"KUBECONFIG=",
	)
	return cmd, nil
}

// StartHost starts kubeplug run and registers its stop (SIGTERM, then kill)
// as a cleanup of t. It does not wait for readiness: see WaitReady.
func StartHost(t testing.TB, o HostOptions) *Host {
	t.Helper()
	bin, err := Kubeplug()
	if err != nil {
		t.Fatal(err)
	}
	if o.Name == "" {
		o.Name = "host"
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(cfg, []byte(o.Config), 0o644); err != nil {
		t.Fatal(err)
	}
	if o.CacheDir == "" {
		if o.CacheDir, err = ModuleCache(); err != nil {
			t.Fatal(err)
		}
	}
	addr, err := portlease.Addr()
	if err != nil {
		t.Fatal(err)
	}
	probeAddr, err := portlease.Addr()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--config", cfg, "--metrics-bind-address", addr, "--health-probe-bind-address", probeAddr,
		"--cache-dir", o.CacheDir, "--log-level", "info"}, o.Args...)
	h := &Host{Addr: addr, ProbeAddr: probeAddr, Name: o.Name, ConfigPath: cfg, log: &SyncBuffer{}, done: make(chan struct{})}
	if h.cmd, err = o.command(bin, dir, args); err != nil {
		t.Fatal(err)
	}
	env := o.Env
	if o.MemoryLimit > 0 {
		env = append(env, fmt.Sprintf("GOMEMLIMIT=%d", o.MemoryLimit/10*8))
		if h.cg, err = newMemcg(o.MemoryLimit); err != nil {
			t.Logf("%s runs without the kernel's memory limit of %d MiB: %v", o.Name, o.MemoryLimit>>20, err)
		} else {
			argv := inMemcg(h.cg, h.cmd.Args)
			h.cmd.Path, h.cmd.Args = "/bin/sh", argv
			t.Cleanup(h.cg.remove) // after the stop below: cleanups run last first
		}
	}
	if len(env) > 0 {
		h.cmd.Env = append(append(os.Environ(), h.cmd.Env...), env...)
	}
	h.cmd.Stdout = h.log
	h.cmd.Stderr = h.log
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		h.err = h.cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		h.Stop(syscall.SIGTERM, 30*time.Second)
		if t.Failed() {
			t.Logf("log of %s:\n%s", h.Name, h.Log())
		}
	})
	return h
}

// Allow holds, for each guest module the tests run (by its directory, as
// Guest takes it), the allow: line of its host.yaml entry that grants what
// its manifest asks: the host runs a module in enforce mode only with one.
var Allow = map[string]string{
	"guests/retention": "  allow: [{action: updateOwnerReferences, resources: [persistentvolumeclaims]}, {action: event, resources: [statefulsets]}, {action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/ownerReferences]}]\n",
	"guests/reclaim": "  allow: [{action: addFinalizer, resources: [persistentvolumes]}, {action: removeFinalizer, resources: [persistentvolumes]}, " +
		"{action: deleteObject, resources: [persistentvolumes]}, {action: deleteVolume}, {action: event, resources: [persistentvolumes]}]\n",
	"guests/templateupdate": "  allow: [{action: applyClaim, resources: [persistentvolumeclaims]}, " +
		"{action: setPartition, resources: [statefulsets]}, " +
		"{action: updateClaimUpdateStatus, resources: [volumeclaimupdates]}, " +
		"{action: event, resources: [persistentvolumeclaims, volumeclaimupdates, statefulsets]}, " +
		"{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels, /metadata/annotations, " +
		"/spec/accessModes, /spec/storageClassName, /spec/resources, /spec/volumeMode, /spec/volumeAttributesClassName]}]\n",
	"examples/warnretain": "  allow: [{action: event, resources: [statefulsets]}]\n",
	"e2e/guests/protect":  "  allow: [{action: addFinalizer, resources: [persistentvolumeclaims]}]\n",
}

// Admission holds, for each guest module with an admit hook whose failure
// must not block the request, the admission: line of its host.yaml entry.
// retention's hook stamps the set's reference on claims at creation; when
// it cannot answer (the host down, restarting, partitioned), the claim is
// created as without it and reconcile adds the reference.
var Admission = map[string]string{
	"guests/retention": "  admission: {failurePolicy: Ignore}\n",
}

// StartModule builds the guest module in dir (see Guest), starts a host that
// runs it alone, in every namespace, as name with the given number of
// workers, and waits until the host is ready.
func StartModule(t testing.TB, kubeconfig, dir, name string, workers int) *Host {
	t.Helper()
	wasm, err := Guest(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := StartHost(t, HostOptions{
		Kubeconfig: kubeconfig,
		Config:     fmt.Sprintf("modules:\n- path: %s\n  name: %s\n  workers: %d\n%s", wasm, name, workers, Allow[dir]),
	})
	h.WaitReady(t)
	return h
}

// Stop sends sig and waits up to grace for the process to exit, then kills
// it. It returns the process's exit error (nil for exit status 0).
func (h *Host) Stop(sig syscall.Signal, grace time.Duration) error {
	select {
	case <-h.done:
		return h.err
	default:
	}
	_ = h.cmd.Process.Signal(sig)
	select {
	case <-h.done:
	case <-time.After(grace):
		_ = h.cmd.Process.Kill()
		<-h.done
	}
	return h.err
}

// MemoryLimited reports whether the kernel holds the host to
// HostOptions.MemoryLimit (a memory cgroup of its own).
func (h *Host) MemoryLimited() bool { return h.cg != nil }

// OOMKills counts the times the kernel killed the host for its memory
// limit; 0 without one.
func (h *Host) OOMKills() int {
	if h.cg == nil {
		return 0
	}
	return h.cg.oomKills()
}

// PeakMemory is the most memory the host has held: its cgroup's peak
// charge (page cache and kernel memory included) when it has one, else its
// peak RSS.
func (h *Host) PeakMemory() (uint64, error) {
	if h.cg != nil {
		if p := h.cg.peak(); p > 0 {
			return p, nil
		}
	}
	return PeakRSS(h.PID())
}

// PID is the process's id.
func (h *Host) PID() int { return h.cmd.Process.Pid }

// Done is closed once the process has exited.
func (h *Host) Done() <-chan struct{} { return h.done }

// ExitCode is the status of the ended process: -1 when a signal ended it
// (or Stop had to kill it).
func (h *Host) ExitCode() int {
	<-h.done
	var exit *exec.ExitError
	switch {
	case h.err == nil:
		return 0
	case errors.As(h.err, &exit):
		return exit.ExitCode()
	}
	return -1
}

// Kill kills the process at once, as a crash or an OOM kill would.
func (h *Host) Kill() {
	_ = h.cmd.Process.Kill()
	<-h.done
}

// Exited reports whether the process has exited.
func (h *Host) Exited() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// Log returns what the process wrote so far.
func (h *Host) Log() string { return h.log.String() }

// Get fetches path from the host's metrics server and returns the status
// code and body.
func (h *Host) Get(path string) (int, string, error) { return Get(h.Addr, path) }

// Get fetches path from a host's metrics server at addr, within 5 seconds,
// and returns the status code and body.
func Get(addr, path string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// WaitReady waits until /readyz answers 200.
func (h *Host) WaitReady(t testing.TB) {
	t.Helper()
	Eventually(t, Timeout, h.Name+" ready", func() (bool, error) {
		if h.Exited() {
			return false, fmt.Errorf("%s exited: %v\n%s", h.Name, h.err, h.Log())
		}
		code, _, err := h.Get("/readyz")
		return err == nil && code == http.StatusOK, nil
	})
}

// SyncBuffer is a bytes.Buffer safe for one writer and concurrent readers:
// a process's output, read while it runs.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Timeout bounds every wait of the end-to-end tests: a hung test, not a
// performance assertion.
const Timeout = 2 * time.Minute

// Eventually polls cond every 200ms until it returns true, failing t with
// the condition's description when it returns an error or timeout passes.
// The timeout is a bound on a hung test, not a performance assertion.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %v%s", what, timeout, suffix(last))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func suffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + strings.TrimSpace(err.Error())
}
