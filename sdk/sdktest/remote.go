package sdktest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/kubeplug/kubeplug/abi"
)

// remotes holds one kubeplug harness process per (binary, module) for the
// life of the test binary: starting the host and compiling the module once
// keeps the wasm run of a package's tests quick. A process whose start failed
// is remembered too, so every test reports the same cause.
var remotes struct {
	sync.Mutex
	m map[[2]string]*remoteStart
}

type remoteStart struct {
	r   *remote
	err error
}

// remote is a running "kubeplug harness --module M.wasm". Calls are
// serialised: the protocol has one request in flight.
type remote struct {
	wasm   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *tail
	m      abi.Manifest

	mu     sync.Mutex
	buf    []byte
	broken error
}

func remoteFor(bin, wasm string) (*remote, error) {
	remotes.Lock()
	defer remotes.Unlock()
	key := [2]string{bin, wasm}
	if s, ok := remotes.m[key]; ok {
		return s.r, s.err
	}
	r, err := startRemote(bin, wasm)
	if remotes.m == nil {
		remotes.m = make(map[[2]string]*remoteStart)
	}
	remotes.m[key] = &remoteStart{r, err}
	return r, err
}

func startRemote(bin, wasm string) (*remote, error) {
	if bin == "" {
		return nil, fmt.Errorf("%s=%s asks for the compiled module, but %s is not set: set it to the path of the kubeplug binary", EnvWASM, wasm, EnvBin)
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: %w; build the kubeplug binary or fix the path", EnvBin, err)
	}
	if _, err := os.Stat(wasm); err != nil {
		return nil, fmt.Errorf("%s: %w; build the module with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (a relative path is relative to the test's package directory)", EnvWASM, err)
	}
	r := &remote{wasm: wasm, stderr: &tail{max: 8 << 10}}
	r.cmd = exec.Command(bin, "harness", "--module", wasm)
	// The host's log (the module's included) goes to the test binary's
	// stderr, which go test shows for failing packages; the tail also goes
	// into errors.
	r.cmd.Stderr = io.MultiWriter(os.Stderr, r.stderr)
	stdin, err := r.cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s harness: %w", bin, err)
	}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s harness: %w", bin, err)
	}
	r.stdin, r.stdout = stdin, bufio.NewReader(stdout)
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s harness: %w", bin, err)
	}
	// The process is not waited for: it exits when the test binary does,
	// which closes its stdin.
	body, err := abi.ReadResponseFrame(r.stdout)
	var failed *abi.RemoteError
	if errors.As(err, &failed) {
		return nil, r.fail(fmt.Errorf("load module: %s", failed.Text))
	}
	if err != nil {
		return nil, r.fail(fmt.Errorf("read manifest: %w", err))
	}
	m, err := abi.DecodeManifest(body)
	if err != nil {
		return nil, r.fail(fmt.Errorf("decode manifest: %w", err))
	}
	r.m = *m
	return r, nil
}

func (r *remote) manifest() abi.Manifest { return r.m }

func (r *remote) reconcile(req *abi.ReconcileRequest, _ func(uint32, string)) (*abi.Result, error) {
	resp, err := r.call(abi.HookReconcile, req)
	if err != nil {
		return nil, err
	}
	return result(resp)
}

func (r *remote) admit(req *abi.AdmitRequest, _ func(uint32, string)) (*abi.AdmitResponse, error) {
	resp, err := r.call(abi.HookAdmit, req)
	if err != nil {
		return nil, err
	}
	return admitResult(resp)
}

// message is a hook's request as a frame needs it.
type message interface {
	MarshalMsg([]byte) ([]byte, error)
}

// call sends one request frame and reads its response. A call that failed
// is a *abi.RemoteError, which matches the module's status as a native
// call's error does (abi.ErrFailed, abi.ErrPanic, ...).
func (r *remote) call(hook abi.Hook, req message) (*abi.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken != nil {
		return nil, r.broken
	}
	frame, err := abi.AppendRequestFrame(r.buf[:0], hook, req)
	if err != nil {
		return nil, err
	}
	r.buf = frame
	if _, err := r.stdin.Write(frame); err != nil {
		return nil, r.fail(fmt.Errorf("write request frame: %w", err))
	}
	body, err := abi.ReadResponseFrame(r.stdout)
	var failed *abi.RemoteError
	if errors.As(err, &failed) {
		return nil, failed
	}
	if err != nil {
		return nil, r.fail(err)
	}
	resp, err := abi.DecodeResponse(body)
	if err != nil {
		return nil, r.fail(err)
	}
	return resp, nil
}

// fail marks the process unusable after a protocol or I/O error, stops it,
// and returns the error with the end of its stderr.
func (r *remote) fail(err error) error {
	_ = r.stdin.Close()
	if r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
	r.broken = fmt.Errorf("kubeplug harness --module %s: %w%s", r.wasm, err, r.stderr.String())
	return r.broken
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// String returns the tail as a suffix for an error message.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return ""
	}
	return "\nkubeplug stderr (last lines):\n" + s
}
