package admission_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
	kruntime "github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/host/runtime/hostile"
)

// An Extism plugin serves a review through Review, the webhook's own path:
// it gets the review's object and configuration as JSON values, and its
// patch, whose value is a JSON value, is held to the grant and applied.
func TestReviewWithExtismPlugin(t *testing.T) {
	var logs bytes.Buffer
	eng, err := kruntime.NewEngine(context.Background(), kruntime.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	answer := `{"status":0,"admit":{"allowed":true,"warnings":["tiered"],"patch":[{"op":"add","path":"/metadata/labels","value":{"app":"web","tier":"gold"}}]}}`
	p, err := eng.LoadPlugin(context.Background(), "tier.wasm", hostile.ExtismAdmitting("", []byte(answer)), kruntime.Limits{})
	require.NoError(t, err)

	m := &admission.Module{Name: "tier", Admitter: p, Granted: labelsGrant, Config: []byte(`{"tier":"gold"}`)}
	o := (&admission.Reviewer{}).Review(context.Background(), m, claimCreate(), 0)
	require.NoError(t, o.Failure)
	require.Equal(t, "mutated", o.Result())
	require.Equal(t, "uid-1", string(o.Response.UID))
	require.Equal(t, []string{"tiered"}, o.Response.Warnings)
	require.Equal(t, admissionv1.PatchTypeJSONPatch, *o.Response.PatchType)
	require.JSONEq(t, `[{"op":"add","path":"/metadata/labels","value":{"app":"web","tier":"gold"}}]`, string(o.Response.Patch))
	require.JSONEq(t, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data-web-0","labels":{"app":"web","tier":"gold"}},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`, string(o.Object))

	// What the plugin logged is its input: the AdmitRequest Review built.
	var in struct {
		Operation string          `json:"operation"`
		Config    json.RawMessage `json:"config"`
		Object    struct {
			PersistentVolumeClaim *abi.PersistentVolumeClaim `json:"persistentVolumeClaim"`
			JSON                  json.RawMessage            `json:"json"`
		} `json:"object"`
	}
	found := false
	for sc := bufio.NewScanner(&logs); sc.Scan(); {
		var rec struct{ Level, Msg, Module string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		if rec.Module == "hostile" && rec.Level == "INFO" && len(rec.Msg) > 0 && rec.Msg[0] == '{' {
			require.NoError(t, json.Unmarshal([]byte(rec.Msg), &in))
			found = true
		}
	}
	require.True(t, found, "the plugin logged its input:\n%s", logs.String())
	require.Equal(t, abi.OperationCreate, in.Operation)
	require.JSONEq(t, `{"tier":"gold"}`, string(in.Config))
	require.JSONEq(t, claimJSON, string(in.Object.JSON))
	require.Equal(t, "1Gi", in.Object.PersistentVolumeClaim.Spec.Resources.Requests["storage"])
}
