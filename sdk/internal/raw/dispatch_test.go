package raw_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/internal/raw"
)

var manifest = abi.Manifest{Name: "t", Version: "1", ABIVersion: abi.Current.String(), Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile}}

// handler answers by key, so one registration covers every outcome.
func handler(req *abi.ReconcileRequest) (*abi.Result, error) {
	switch req.Key {
	case "fail":
		return nil, errors.New("no can do")
	case "panic":
		var m map[string]int
		m["x"] = 1
	case "panic-empty":
		panic("")
	case "bad":
		return nil, raw.BadInputError("now is garbage")
	case "nil":
		return nil, nil
	case "log":
		raw.WriteLog(abi.LogWarn, "hello from the guest")
	}
	return &abi.Result{Message: "saw " + req.Key, Actions: []abi.Action{{Type: abi.ActionDeleteObject, Target: abi.ObjectRef{Kind: abi.KindPod, Name: req.Key}}}}, nil
}

func register(t *testing.T) {
	t.Helper()
	raw.Reset()
	t.Cleanup(raw.Reset)
	if err := raw.Register(manifest, raw.Handlers{Reconcile: handler}); err != nil {
		t.Fatal(err)
	}
}

func encode(t *testing.T, req *abi.ReconcileRequest) []byte {
	t.Helper()
	b, err := req.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t *testing.T, b []byte) *abi.Response {
	t.Helper()
	resp, err := abi.DecodeResponse(b)
	if err != nil {
		t.Fatalf("the dispatch returned a malformed response: %v", err)
	}
	return resp
}

func TestReconcileStatuses(t *testing.T) {
	register(t)
	tests := []struct {
		name    string
		in      []byte
		status  abi.Status
		message string // substring
	}{
		{"ok", encode(t, &abi.ReconcileRequest{Subject: abi.SubjectStatefulSet, Key: "default/web"}), abi.StatusOK, ""},
		{"subject left empty", encode(t, &abi.ReconcileRequest{Key: "default/web"}), abi.StatusOK, ""},
		{"module error", encode(t, &abi.ReconcileRequest{Key: "fail"}), abi.StatusFailed, "no can do"},
		{"runtime panic", encode(t, &abi.ReconcileRequest{Key: "panic"}), abi.StatusPanic, "assignment to entry in nil map"},
		{"panic with empty value", encode(t, &abi.ReconcileRequest{Key: "panic-empty"}), abi.StatusPanic, "empty value"},
		{"bad input from the sdk", encode(t, &abi.ReconcileRequest{Key: "bad"}), abi.StatusBadInput, "now is garbage"},
		{"garbage", []byte{0xc1, 0x00}, abi.StatusBadInput, "malformed message"},
		{"empty input", nil, abi.StatusBadInput, "malformed message"},
		{"trailing bytes", append(encode(t, &abi.ReconcileRequest{Key: "x"}), 0x00), abi.StatusBadInput, "trailing"},
		{"other subject", encode(t, &abi.ReconcileRequest{Subject: abi.SubjectPersistentVolume, Key: "pv-1"}), abi.StatusBadInput, `handles "statefulset"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp *abi.Response
			raw.Native(nil, func() { resp = decode(t, raw.Reconcile(tt.in)) })
			if resp.Status != tt.status {
				t.Fatalf("status = %v (%s), want %v", resp.Status, resp.Message, tt.status)
			}
			if !strings.Contains(resp.Message, tt.message) {
				t.Errorf("message = %q, want it to contain %q", resp.Message, tt.message)
			}
			if (resp.Status == abi.StatusOK) != (resp.Result != nil) {
				t.Errorf("result = %v with status %v: want a result exactly when ok", resp.Result, resp.Status)
			}
		})
	}
}

func TestReconcileResult(t *testing.T) {
	register(t)
	resp := decode(t, raw.Reconcile(encode(t, &abi.ReconcileRequest{Key: "default/web"})))
	if resp.Result.Message != "saw default/web" || len(resp.Result.Actions) != 1 || resp.Result.Actions[0].Target.Name != "default/web" {
		t.Errorf("result = %+v, want the handler's", resp.Result)
	}
	resp = decode(t, raw.Reconcile(encode(t, &abi.ReconcileRequest{Key: "nil"})))
	if resp.Status != abi.StatusOK || resp.Result == nil || len(resp.Result.Actions) != 0 {
		t.Errorf("nil result gave %+v, want ok with an empty result", resp)
	}
}

func TestReconcileReusesOutput(t *testing.T) {
	register(t)
	first := raw.Reconcile(encode(t, &abi.ReconcileRequest{Key: "aaaa"}))
	p := &first[0]
	second := raw.Reconcile(encode(t, &abi.ReconcileRequest{Key: "bbbb"}))
	if &second[0] != p {
		t.Error("the second response did not reuse the first's buffer")
	}
	if got := decode(t, second).Result.Message; got != "saw bbbb" {
		t.Errorf("second response says %q", got)
	}
}

func TestReconcileWithoutModule(t *testing.T) {
	raw.Reset()
	resp := decode(t, raw.Reconcile(encode(t, &abi.ReconcileRequest{Key: "x"})))
	if resp.Status != abi.StatusNoHook || !strings.Contains(resp.Message, "sdk.Register") {
		t.Errorf("response = %+v, want no-hook naming sdk.Register", resp)
	}
	if raw.Manifest() != nil || raw.Registered() {
		t.Error("a manifest without a registration")
	}
}

func TestRegister(t *testing.T) {
	register(t)
	m, err := abi.DecodeManifest(raw.Manifest())
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != manifest.Name || m.Subject != manifest.Subject {
		t.Errorf("manifest = %+v, want %+v", m, manifest)
	}
	err = raw.Register(abi.Manifest{Name: "second"}, raw.Handlers{Reconcile: handler})
	if !errors.Is(err, raw.ErrRegistered) {
		t.Errorf("second Register: %v, want ErrRegistered", err)
	}
	raw.Reset()
	if err := raw.Register(manifest, raw.Handlers{}); err == nil {
		t.Error("Register with a nil handler succeeded")
	}
}

func TestBadInputLooksLikeItsMessage(t *testing.T) {
	if got := raw.BadInputError("x y").Error(); got != "x y" {
		t.Errorf("Error() = %q", got)
	}
}

func TestNativeLog(t *testing.T) {
	register(t)
	var got []string
	raw.Native(func(level uint32, msg string) {
		if level != abi.LogWarn {
			t.Errorf("level = %d, want warn", level)
		}
		got = append(got, msg)
	}, func() { raw.Reconcile(encode(t, &abi.ReconcileRequest{Key: "log"})) })
	if len(got) != 1 || got[0] != "hello from the guest" {
		t.Errorf("logs = %q", got)
	}

	// A panic's stack goes to the log, so the author can find the line.
	got = nil
	raw.Native(func(_ uint32, msg string) { got = append(got, msg) }, func() {
		raw.Reconcile(encode(t, &abi.ReconcileRequest{Key: "panic"}))
	})
	if len(got) != 1 || !strings.Contains(got[0], "dispatch_test.go") {
		t.Errorf("panic log = %q, want a stack naming the test file", got)
	}
}

func admitHandler(req *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	switch req.Name {
	case "fail":
		return nil, errors.New("no can do")
	case "panic":
		panic("admit panicked")
	case "nil":
		return nil, nil
	}
	return &abi.AdmitResponse{Allowed: false, Message: "saw " + req.Name}, nil
}

func TestAdmitDispatch(t *testing.T) {
	raw.Reset()
	t.Cleanup(raw.Reset)
	if err := raw.Register(manifest, raw.Handlers{Admit: admitHandler}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		status  abi.Status
		message string
		allowed bool
	}{
		{"x", abi.StatusOK, "saw x", false},
		{"nil", abi.StatusOK, "", true},
		{"fail", abi.StatusFailed, "no can do", false},
		{"panic", abi.StatusPanic, "admit panicked", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := (&abi.AdmitRequest{Name: c.name}).MarshalMsg(nil)
			if err != nil {
				t.Fatal(err)
			}
			var resp *abi.Response
			raw.Native(nil, func() { resp = decode(t, raw.Admit(in)) })
			if resp.Status != c.status {
				t.Fatalf("status %v (%s), want %v", resp.Status, resp.Message, c.status)
			}
			if c.status != abi.StatusOK {
				if !strings.Contains(resp.Message, c.message) {
					t.Fatalf("message %q, want %q", resp.Message, c.message)
				}
				return
			}
			if resp.Admit == nil || resp.Admit.Allowed != c.allowed || resp.Admit.Message != c.message {
				t.Fatalf("answer %+v, want allowed %v message %q", resp.Admit, c.allowed, c.message)
			}
		})
	}
	t.Run("reconcile of an admit-only module", func(t *testing.T) {
		resp := decode(t, raw.Reconcile(encode(t, &abi.ReconcileRequest{Key: "x"})))
		if resp.Status != abi.StatusNoHook || !strings.Contains(resp.Message, "registered no reconcile hook") {
			t.Fatalf("got %v %q", resp.Status, resp.Message)
		}
	})
}
