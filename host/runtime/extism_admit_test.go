package runtime_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/host/runtime/hostile"
)

// admitInput is what the admit hook of hostile.ExtismAdmitting logged: the
// request exactly as the host encoded it.
func admitInput(t *testing.T, sink *logSink) []byte {
	t.Helper()
	var in []byte
	for _, r := range sink.all() {
		if r.Level == slog.LevelInfo && r.Attrs["module"] == "hostile" {
			require.Nil(t, in, "one log record from the plugin")
			in = []byte(r.Message)
		}
	}
	require.NotNil(t, in, "the plugin logged its input")
	return in
}

// msgpackAnswer is resp as a MessagePack plugin outputs it.
func msgpackAnswer(t *testing.T, resp *abi.Response) []byte {
	t.Helper()
	b, err := resp.MarshalMsg(nil)
	require.NoError(t, err)
	return b
}

// extismAdmitRequest is admitRequest with a configuration and an old object,
// so that every JSON field of the request is there.
func extismAdmitRequest() *abi.AdmitRequest {
	req := admitRequest("data-web-0")
	req.Operation = abi.OperationUpdate
	req.Config = []byte(`{"tier":"gold","ignore":["kube-system"]}`)
	req.OldObject = &abi.AdmitObject{Kind: abi.KindPersistentVolumeClaim, JSON: []byte(`{"metadata":{"name":"data-web-0","labels":{"app":"web"}}}`)}
	return req
}

const admitKey = "UPDATE persistentvolumeclaims default/data-web-0"

// A plugin's admit hook gets the request in its encoding, in JSON with the
// configuration and the objects as the JSON values they are, and its
// answer, a patch value in JSON being a JSON value too, becomes the
// AdmitResponse a native module's would.
func TestExtismAdmit(t *testing.T) {
	// The value as the plugin writes it, spaces and all: the host passes
	// the bytes on, it does not re-encode them.
	const value = `{"tier": "gold", "sizes": [1, 2.5]}`
	allowed := &abi.AdmitResponse{Allowed: true, Warnings: []string{"labelled"},
		Patch: []abi.PatchOperation{{Op: abi.PatchAdd, Path: "/metadata/labels", Value: []byte(value)}}}
	denied := &abi.AdmitResponse{Message: "claims of web need a tier label", Reason: "Invalid", Code: 422}
	answers := []struct {
		name     string
		encoding string
		answer   []byte
		want     *abi.AdmitResponse
	}{
		{"allowed with a patch", runtime.EncodingJSON,
			[]byte(`{"status":0,"admit":{"allowed":true,"warnings":["labelled"],"patch":[{"op":"add","path":"/metadata/labels","value":` + value + `}]}}`), allowed},
		{"denied", runtime.EncodingJSON,
			[]byte(`{"status":0,"admit":{"allowed":false,"message":"claims of web need a tier label","reason":"Invalid","code":422}}`), denied},
		// null is the JSON value null here, not an absent value: RFC 6902
		// sets the field to null.
		{"null value", runtime.EncodingJSON,
			[]byte(`{"status":0,"admit":{"allowed":true,"patch":[{"op":"replace","path":"/metadata/labels/tier","value":null}]}}`),
			&abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{{Op: abi.PatchReplace, Path: "/metadata/labels/tier", Value: []byte("null")}}}},
		{"allowed with a patch", runtime.EncodingMsgpack, msgpackAnswer(t, &abi.Response{Admit: allowed}), allowed},
		{"denied", runtime.EncodingMsgpack, msgpackAnswer(t, &abi.Response{Admit: denied}), denied},
	}
	for _, tt := range answers {
		t.Run(tt.encoding+"/"+tt.name, func(t *testing.T) {
			sink := &logSink{}
			p, err := newEngine(t, runtime.Options{Logger: sink.logger()}).LoadAny(context.Background(), "admit.wasm",
				hostile.ExtismAdmitting(tt.encoding, tt.answer), runtime.Limits{})
			require.NoError(t, err)
			require.Equal(t, tt.encoding, p.Info().Encoding)
			require.True(t, p.HasHook(abi.HookAdmit))
			require.True(t, p.HasHook(abi.HookReconcile))

			req := extismAdmitRequest()
			got, err := p.Admit(context.Background(), req)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)

			in := admitInput(t, sink)
			if tt.encoding == runtime.EncodingMsgpack {
				// The native wire type, config and objects as bytes.
				var sent abi.AdmitRequest
				_, err := sent.UnmarshalMsg(in)
				require.NoError(t, err)
				require.Equal(t, req, &sent)
				return
			}
			var sent struct {
				UID       string `json:"uid"`
				Operation string `json:"operation"`
				Config    any    `json:"config"`
				Object    struct {
					Kind                  string `json:"kind"`
					PersistentVolumeClaim any    `json:"persistentVolumeClaim"`
					JSON                  any    `json:"json"`
				} `json:"object"`
				OldObject struct {
					JSON any `json:"json"`
				} `json:"oldObject"`
				StatefulSet any `json:"statefulSet"`
			}
			require.NoError(t, json.Unmarshal(in, &sent), "%s", in)
			require.Equal(t, "u1", sent.UID)
			require.Equal(t, abi.OperationUpdate, sent.Operation)
			require.Equal(t, map[string]any{"tier": "gold", "ignore": []any{"kube-system"}}, sent.Config, "config is a JSON value, not base64")
			require.Equal(t, abi.KindPersistentVolumeClaim, sent.Object.Kind)
			require.NotNil(t, sent.Object.PersistentVolumeClaim)
			require.Equal(t, map[string]any{"metadata": map[string]any{"name": "data-web-0"}}, sent.Object.JSON, "object.json is a JSON value")
			require.Equal(t, map[string]any{"metadata": map[string]any{"name": "data-web-0", "labels": map[string]any{"app": "web"}}}, sent.OldObject.JSON)
			require.NotNil(t, sent.StatefulSet)
		})
	}
}

// Without a configuration or objects, a JSON plugin's request has none of
// those fields, rather than nulls or empty strings.
func TestExtismAdmitLeavesOutWhatIsAbsent(t *testing.T) {
	sink := &logSink{}
	p, err := newEngine(t, runtime.Options{Logger: sink.logger()}).LoadAny(context.Background(), "admit.wasm",
		hostile.ExtismAdmitting("", []byte(`{"status":0,"admit":{"allowed":true}}`)), runtime.Limits{})
	require.NoError(t, err)
	req := admitRequest("data-web-0")
	req.Operation, req.Object = abi.OperationDelete, nil
	got, err := p.Admit(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, &abi.AdmitResponse{Allowed: true}, got)
	var sent map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(admitInput(t, sink), &sent))
	for _, absent := range []string{"config", "object", "oldObject"} {
		require.NotContains(t, sent, absent)
	}
}

// A plugin without the admit hook is not called for it.
func TestExtismAdmitWithoutTheHook(t *testing.T) {
	p := loadPlugin(t, warning, runtime.Limits{})
	require.False(t, p.HasHook(abi.HookAdmit))
	_, err := p.Admit(context.Background(), extismAdmitRequest())
	require.ErrorIs(t, err, abi.ErrNoHook)
}

// A plugin's admit answers are held to the same checks as a native
// module's, with the same consequences for its instance.
func TestExtismAdmitHostile(t *testing.T) {
	patch := &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{
		{Op: abi.PatchAdd, Path: "/metadata/labels/a", Value: []byte(`"1"`)},
		{Op: abi.PatchAdd, Path: "/metadata/labels/b", Value: []byte(`"2"`)},
		{Op: abi.PatchAdd, Path: "/metadata/labels/c", Value: []byte(`"3"`)},
	}}
	tests := []struct {
		name string
		wasm []byte
		kind runtime.ErrorKind
		want string
		kept bool
	}{
		{"json/no admit answer", hostile.ExtismAdmitting("", []byte(`{"status":0}`)), runtime.KindOutput, "no answer to the admit hook", false},
		{"json/a reconcile answer", hostile.ExtismAdmitting("", []byte(`{"status":0,"result":{},"admit":{"allowed":true}}`)), runtime.KindOutput, "no answer to the admit hook", false},
		{"msgpack/no admit answer", hostile.ExtismAdmitting("msgpack", msgpackAnswer(t, &abi.Response{})), runtime.KindOutput, "no answer to the admit hook", false},
		{"json/patch over maxActions", hostile.ExtismAdmitting("", []byte(`{"status":0,"admit":{"allowed":true,"patch":[`+
			`{"op":"add","path":"/metadata/labels/a","value":"1"},{"op":"add","path":"/metadata/labels/b","value":"2"},{"op":"add","path":"/metadata/labels/c","value":"3"}]}}`)),
			runtime.KindOutput, "admit.patch holds 3 operations, more than the limit of 2", false},
		{"msgpack/patch over maxActions", hostile.ExtismAdmitting("msgpack", msgpackAnswer(t, &abi.Response{Admit: patch})),
			runtime.KindOutput, "admit.patch holds 3 operations, more than the limit of 2", false},
		{"json/failed", hostile.ExtismAdmitting("", []byte(`{"status":2,"message":"config: no tiers"}`)), runtime.KindStatus, "config: no tiers", true},
		{"loop", hostile.ExtismAdmitLooping(), runtime.KindDeadline, "deadline exceeded after", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := newEngine(t, runtime.Options{}).LoadAny(context.Background(), "admit.wasm", tt.wasm,
				runtime.Limits{Instances: 1, MaxActions: 2, Deadline: 200 * time.Millisecond})
			require.NoError(t, err)
			_, err = p.Admit(context.Background(), extismAdmitRequest())
			var ce *runtime.CallError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "hostile", ce.Module)
			require.Equal(t, abi.HookAdmit, ce.Hook)
			require.Equal(t, admitKey, ce.Key)
			require.ErrorIs(t, err, tt.kind)
			require.ErrorContains(t, err, tt.want)
			discarded := uint64(1)
			if tt.kept {
				discarded = 0
			}
			require.Equal(t, discarded, p.Stats().Discarded, "as a native module's instance")
			_, err = p.Reconcile(context.Background(), request("default/web"))
			require.NoError(t, err, "the reconcile hook keeps serving")
		})
	}
}
