package sdktest_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

var (
	now       = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	fixedZone = time.FixedZone("CET", 3600)
)

// useServer points the harness at this test binary serving in mode, with a
// module path of its own so that each test gets its own process.
func useServer(t *testing.T, mode string) string {
	t.Helper()
	wasm := filepath.Join(t.TempDir(), mode+".wasm")
	if err := os.WriteFile(wasm, []byte("not read by the stand-in"), 0o600); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(sdktest.EnvBin, exe)
	t.Setenv(sdktest.EnvWASM, wasm)
	t.Setenv(envServe, mode)
	return wasm
}

// fatalTB records the failure New reports instead of failing the test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// newFails runs sdktest.New and returns the failure it reported, "" if none.
func newFails(t *testing.T) string {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sdktest.New(f)
	}()
	<-done
	return f.msg
}

func TestNativeAndRemoteAgree(t *testing.T) {
	set := sdktest.StatefulSet("web", 2)
	requests := []*abi.ReconcileRequest{
		sdktest.Request(now, set, sdktest.Pod(set, 0), sdktest.Pod(set, 1)),
		sdktest.Request(now, sdktest.Key("default/gone")),
		sdktest.Request(now, sdktest.StatefulSet("bad", 1, sdktest.Labels("fail", "no way"))),
	}
	type answer struct {
		res *abi.Result
		err string
	}
	run := func(h *sdktest.Harness) []answer {
		var out []answer
		for _, req := range requests {
			res, err := h.Reconcile(req)
			a := answer{res: res}
			if err != nil {
				a.err = err.Error()
			}
			out = append(out, a)
		}
		return out
	}

	t.Setenv(sdktest.EnvWASM, "")
	native := sdktest.New(t)
	if native.WASM() != "" {
		t.Fatal("native harness claims to run a .wasm")
	}
	want := run(native)
	if logs := native.Logs(); len(logs) != 1 || logs[0].Message != "reconciling default/web" {
		t.Errorf("native logs = %+v, want the one call that logged", logs)
	}

	wasm := useServer(t, "ok")
	remote := sdktest.New(t)
	if remote.WASM() != wasm {
		t.Errorf("WASM() = %q, want %q", remote.WASM(), wasm)
	}
	if !reflect.DeepEqual(remote.Manifest(), native.Manifest()) {
		t.Errorf("manifests differ: %+v and %+v", remote.Manifest(), native.Manifest())
	}
	got := run(remote)
	for i := range want {
		if !reflect.DeepEqual(got[i].res, want[i].res) || !strings.Contains(got[i].err, want[i].err) {
			t.Errorf("request %d: remote %+v, native %+v", i, got[i], want[i])
		}
	}
	if want[2].err == "" || !strings.Contains(got[2].err, "no way") {
		t.Errorf("module errors do not come back: %+v", got[2])
	}
	if remote.Logs() != nil {
		t.Errorf("remote harness captured logs %+v", remote.Logs())
	}

	// A second harness reuses the process.
	if _, err := sdktest.New(t).Reconcile(requests[0]); err != nil {
		t.Error(err)
	}
}

func TestRemoteStartFailures(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T)
		want  string
	}{
		{"no binary", func(t *testing.T) {
			useServer(t, "ok")
			t.Setenv(sdktest.EnvBin, "")
		}, "KUBEPLUG_BIN is not set"},
		{"missing binary", func(t *testing.T) {
			useServer(t, "ok")
			t.Setenv(sdktest.EnvBin, filepath.Join(t.TempDir(), "kubeplug"))
		}, "KUBEPLUG_BIN: stat"},
		{"missing module", func(t *testing.T) {
			useServer(t, "ok")
			t.Setenv(sdktest.EnvWASM, filepath.Join(t.TempDir(), "missing.wasm"))
		}, "KUBEPLUG_TEST_WASM: stat"},
		{"module does not load", func(t *testing.T) { useServer(t, "loadfail") }, "load module: module.wasm: abi version 9.0.0 is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup(t)
			if got := newFails(t); !strings.Contains(got, tt.want) {
				t.Errorf("New failed with %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRemoteCrash(t *testing.T) {
	useServer(t, "crash")
	h := sdktest.New(t)
	req := sdktest.Request(now, sdktest.StatefulSet("web", 1))
	_, err := h.Reconcile(req)
	if err == nil || !strings.Contains(err.Error(), "instance trapped") {
		t.Fatalf("err = %v, want one with the server's stderr", err)
	}
	_, again := h.Reconcile(req)
	if !errors.Is(again, err) && (again == nil || again.Error() != err.Error()) {
		t.Errorf("after a crash: %v, want the same error %v", again, err)
	}
}

func TestMustReconcile(t *testing.T) {
	t.Setenv(sdktest.EnvWASM, "")
	set := sdktest.StatefulSet("web", 1)
	res := sdktest.New(t).MustReconcile(sdktest.Request(now, set, sdktest.Pod(set, 0)))
	if len(res.Actions) != 1 || res.Actions[0].Event.Message != "web-0" || res.Actions[0].Target != sdk.RefOf(set) {
		t.Errorf("result = %+v", res)
	}
}
