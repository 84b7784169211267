package runtime_test

import (
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// FuzzDecodeOutput feeds arbitrary bytes to the decoder the host runs on a
// hook's output. It must return an error or a response, never panic, and a
// response it accepts holds no more actions than the limit, and only strings
// that ownStrings accepts again (valid UTF-8, within the length cap).
func FuzzDecodeOutput(f *testing.F) {
	name := "\xff\xfe"
	for _, r := range []*abi.Response{
		{Status: abi.StatusOK, Result: &abi.Result{Actions: []abi.Action{
			{Type: abi.ActionAddFinalizer, Target: abi.ObjectRef{Kind: abi.KindPersistentVolumeClaim, Namespace: "default", Name: "data-web-0", UID: "u"}, Finalizer: "kubeplug.dev/x"},
			{Type: abi.ActionEvent, Event: &abi.Event{Type: abi.EventWarning, Reason: "R", Message: "m"}},
			{Type: abi.ActionUpdateOwnerReferences, OwnerReferences: &abi.OwnerReferencesChange{Add: []abi.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "p"}}}},
		}, RequeueAfterMillis: 1000}},
		{Status: abi.StatusOK, Result: &abi.Result{Actions: []abi.Action{{Type: name}}}},
		{Status: abi.StatusFailed, Message: "no"},
	} {
		b, err := r.MarshalMsg(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	limits := runtime.Limits{MaxActions: 4}
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, err := runtime.DecodeOutputForTest(b, limits)
		if err != nil {
			return
		}
		requireWithinLimits(t, resp, limits)
	})
}

// FuzzDecodeJSONOutput is FuzzDecodeOutput for the JSON answers of Extism
// plugins: never a panic, and an accepted answer holds no more actions than
// the limit and only strings ownStrings accepts again.
func FuzzDecodeJSONOutput(f *testing.F) {
	for _, s := range []string{
		`{"status":0,"result":{"actions":[{"type":"event","target":{"kind":"StatefulSet","name":"web"},"event":{"type":"Warning","reason":"R","message":"m"}}],"requeueAfterMillis":5}}`,
		`{"status":0,"result":{"actions":[{},{},{},{},{}]}}`,
		`{"status":2,"message":"no"}`,
		`{"result":{"actions":[[[[[]]]]]}}`,
		"{\"status\":0,\"message\":\"\xff\"}",
		`{"status":0} {}`,
		`{"RESULT":{"Actions":[{},{},{},{},{}]}}`,
	} {
		f.Add([]byte(s))
	}
	limits := runtime.Limits{MaxActions: 4}
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, err := runtime.DecodeJSONOutputForTest(b, limits)
		if err != nil {
			return
		}
		requireWithinLimits(t, resp, limits)
	})
}

// requireWithinLimits fails a fuzz run whose decoder accepted resp with
// more actions than limits allow or a string ownStrings refuses.
func requireWithinLimits(t *testing.T, resp *abi.Response, limits runtime.Limits) {
	t.Helper()
	if resp.Result != nil && len(resp.Result.Actions) > limits.MaxActions {
		t.Fatalf("accepted %d actions over the limit of %d", len(resp.Result.Actions), limits.MaxActions)
	}
	if err := runtime.OwnStringsForTest(resp); err != nil {
		t.Fatalf("accepted a response whose strings fail the check: %v", err)
	}
}
