package sdktest

import (
	"os"
	"sync"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// Environment variables that switch New to the compiled module.
const (
	// EnvWASM names the module's .wasm; when set, tests run against it.
	EnvWASM = "KUBEPLUG_TEST_WASM"
	// EnvBin names the kubeplug binary that serves the .wasm.
	EnvBin = "KUBEPLUG_BIN"
)

// LogRecord is one log record a module wrote with sdk.Log.
type LogRecord struct {
	Level   sdk.Level
	Message string
}

// backend is where a harness sends calls: the registered module in this
// process, or a kubeplug harness process running the .wasm.
type backend interface {
	manifest() abi.Manifest
	reconcile(req *abi.ReconcileRequest, log func(level uint32, msg string)) (*abi.Result, error)
	admit(req *abi.AdmitRequest, log func(level uint32, msg string)) (*abi.AdmitResponse, error)
}

// Harness calls one module for one test. It is safe for parallel subtests.
type Harness struct {
	t       testing.TB
	backend backend
	wasm    string

	mu   sync.Mutex
	logs []LogRecord
}

// New returns a harness for the module of this test binary: natively the one
// registered by init(), or the compiled module named by KUBEPLUG_TEST_WASM.
// It fails the test when neither is usable.
//
//	h := sdktest.New(t)
func New(t testing.TB) *Harness {
	t.Helper()
	h := &Harness{t: t}
	wasm := os.Getenv(EnvWASM)
	if wasm == "" {
		b, err := newNative()
		if err != nil {
			t.Fatalf("sdktest: %v", err)
		}
		h.backend = b
		return h
	}
	b, err := remoteFor(os.Getenv(EnvBin), wasm)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	h.backend, h.wasm = b, wasm
	return h
}

// WASM returns the path of the compiled module the harness runs, or "" when
// it runs the module natively.
func (h *Harness) WASM() string { return h.wasm }

// Manifest returns the module's manifest as the host reads it.
func (h *Harness) Manifest() abi.Manifest { return h.backend.manifest() }

// Admit calls the module's admit hook (ABI 1.1) with req, natively or
// through the host's runtime as Reconcile does. The answer is the module's,
// before the host applies its patch: kubeplug test's admission cases check
// the patched object.
func (h *Harness) Admit(req *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	return h.backend.admit(req, h.log)
}

// Reconcile calls the module's reconcile hook with req. A module that
// returns an error, panics or cannot decode req gives an error that matches
// abi.ErrFailed, abi.ErrPanic or abi.ErrBadInput, natively and against the
// .wasm (where it carries the host's text, and a failure of the host's own,
// a trap or a sandbox limit, matches none of them).
func (h *Harness) Reconcile(req *abi.ReconcileRequest) (*abi.Result, error) {
	return h.backend.reconcile(req, h.log)
}

// MustReconcile is Reconcile that fails the test on error.
func (h *Harness) MustReconcile(req *abi.ReconcileRequest) *abi.Result {
	h.t.Helper()
	res, err := h.Reconcile(req)
	if err != nil {
		h.t.Fatalf("reconcile %s: %v", req.Key, err)
	}
	return res
}

// Logs returns what the module logged through this harness so far. Only
// native runs capture logs; against the .wasm the host logs them to the
// kubeplug process's stderr, and Logs returns nil.
func (h *Harness) Logs() []LogRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]LogRecord(nil), h.logs...)
}

func (h *Harness) log(level uint32, msg string) {
	h.mu.Lock()
	h.logs = append(h.logs, LogRecord{Level: sdk.Level(level), Message: msg})
	h.mu.Unlock()
	h.t.Logf("guest log (level %d): %s", level, msg)
}
