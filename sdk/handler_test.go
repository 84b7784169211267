package sdk_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// These go through the registered testModule with the native harness: the
// same dispatch and codec as the wasm exports.

func TestHandler(t *testing.T) {
	t.Setenv(sdktest.EnvWASM, "")
	set := sdktest.StatefulSet("web", 2)
	tests := []struct {
		name    string
		req     *abi.ReconcileRequest
		err     error
		message string // substring of the error
		requeue int64
		actions int
	}{
		{"ok", sdktest.Request(now, set, sdktest.Pod(set, 0)), nil, "", 0, 1},
		{"requeue", sdktest.Request(now, set, sdktest.Config(`{"requeue": "2.5s"}`)), nil, "", 2500, 1},
		{"module error", sdktest.Request(now, set, sdktest.Config(`{"fail": "cannot decide"}`)), abi.ErrFailed, "cannot decide", 0, 0},
		{"panic", sdktest.Request(now, set, sdktest.Config(`{"panic": true}`)), abi.ErrPanic, "asked to panic", 0, 0},
		{"negative requeue", sdktest.Request(now, set, sdktest.Config(`{"requeue": "-1s"}`)), abi.ErrFailed, "negative RequeueAfter", 0, 0},
		{"bad config", sdktest.Request(now, set, sdktest.Config(`{"fial": "x"}`)), abi.ErrFailed, `unknown field "fial"`, 0, 0},
		{"bad time", &abi.ReconcileRequest{Subject: abi.SubjectStatefulSet, Key: "default/web", Now: "noon"}, abi.ErrBadInput, `now "noon"`, 0, 0},
		{"impossible time read", withNow(sdktest.Request(now, set), "2025-13-01T12:00:00Z"), abi.ErrBadInput, `now "2025-13-01T12:00:00Z"`, 0, 0},
		{"impossible time unread", withNow(sdktest.Request(now, sdktest.Key("default/web")), "2025-13-01T12:00:00Z"), nil, "", 0, 0},
		{"time read after a bad one", sdktest.Request(now, set), nil, "", 0, 1},
		{"set gone", sdktest.Request(now, sdktest.Key("default/web")), nil, "", 0, 0},
	}
	h := sdktest.New(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := h.Reconcile(tt.req)
			if !errors.Is(err, tt.err) || (err != nil && !strings.Contains(err.Error(), tt.message)) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.err, tt.message)
			}
			if err != nil {
				return
			}
			if res.RequeueAfterMillis != tt.requeue || len(res.Actions) != tt.actions {
				t.Errorf("result = %+v, want requeue %d and %d actions", res, tt.requeue, tt.actions)
			}
		})
	}
}

// withNow sets req's now to s, which sdktest.Request cannot write.
func withNow(req *abi.ReconcileRequest, s string) *abi.ReconcileRequest {
	req.Now = s
	return req
}

// The handler reuses one Request across calls: its lookups must see each
// call's objects only.
func TestHandlerLookupsAreFresh(t *testing.T) {
	t.Setenv(sdktest.EnvWASM, "")
	set := sdktest.StatefulSet("web", 2)
	lookup := sdktest.Config(`{"claim": "data-web-0", "pod": 0}`)
	tests := []struct {
		name string
		req  *abi.ReconcileRequest
		want string
	}{
		{"present", sdktest.Request(now, set, sdktest.Pod(set, 0), sdktest.Claim("data", set, 0), lookup), "claim data-web-0 found: true. pod 0 found: true. "},
		{"gone", sdktest.Request(now, set, sdktest.Pod(set, 1), sdktest.Claim("data", set, 1), lookup), "claim data-web-0 found: false. pod 0 found: false. "},
		{"back", sdktest.Request(now, set, sdktest.Pod(set, 0), sdktest.Claim("data", set, 0), lookup), "claim data-web-0 found: true. pod 0 found: true. "},
	}
	h := sdktest.New(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := h.MustReconcile(tt.req).Message; got != tt.want {
				t.Errorf("message = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHandlerSeesTheRequest(t *testing.T) {
	t.Setenv(sdktest.EnvWASM, "")
	set := sdktest.StatefulSet("web", 2)
	res := sdktest.New(t).MustReconcile(sdktest.Request(now, set, sdktest.Pod(set, 0), sdktest.Pod(set, 1)))
	want := sdk.Normal(sdk.RefOf(set), "Seen", "at 2025-03-01T12:00:00Z with 2 pods")
	if len(res.Actions) != 1 || *res.Actions[0].Event != *want.Event || res.Actions[0].Target != want.Target {
		t.Errorf("actions = %+v, want %+v", res.Actions, want)
	}
}

func TestLog(t *testing.T) {
	t.Setenv(sdktest.EnvWASM, "")
	h := sdktest.New(t)
	h.MustReconcile(sdktest.Request(now, sdktest.StatefulSet("web", 1), sdktest.Config(`{"log": "hello"}`)))
	want := []sdktest.LogRecord{{Level: sdk.LevelWarn, Message: "log: hello"}}
	if got := h.Logs(); len(got) != 1 || got[0] != want[0] {
		t.Errorf("logs = %+v, want %+v", got, want)
	}
	// Each harness captures its own calls only.
	if got := sdktest.New(t).Logs(); len(got) != 0 {
		t.Errorf("a new harness has logs %+v", got)
	}
}
