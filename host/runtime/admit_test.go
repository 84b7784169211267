package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/host/runtime/hostile"
)

func admitRequest(name string) *abi.AdmitRequest {
	return &abi.AdmitRequest{
		UID: "u1", Operation: abi.OperationCreate, Namespace: "default", Name: name,
		Kind:     abi.GroupVersionKind{Version: "v1", Kind: abi.KindPersistentVolumeClaim},
		Resource: abi.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"},
		Object: &abi.AdmitObject{
			Kind:                  abi.KindPersistentVolumeClaim,
			PersistentVolumeClaim: &abi.PersistentVolumeClaim{Metadata: abi.ObjectMeta{Name: name, Namespace: "default"}},
			JSON:                  []byte(`{"metadata":{"name":"` + name + `"}}`),
		},
		StatefulSet: &abi.StatefulSetSubject{Set: &abi.StatefulSet{Metadata: abi.ObjectMeta{Name: "web"}}},
		Now:         "2024-06-01T12:00:00Z",
	}
}

func TestAdmit(t *testing.T) {
	m := load(t, "admitter", runtime.Limits{Deadline: 300 * time.Millisecond}, runtime.Options{})
	require.True(t, m.HasHook(abi.HookAdmit))
	require.True(t, m.HasHook(abi.HookReconcile))

	answers := []struct {
		name string
		want *abi.AdmitResponse
	}{
		{"allow", &abi.AdmitResponse{Allowed: true, Warnings: []string{"saw CREATE"}}},
		{"deny", &abi.AdmitResponse{Message: "denied default/deny", Code: 422}},
		{"patch", &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{{Op: "add", Path: "/metadata/labels/tier", Value: []byte(`"gold"`)}}}},
		{"objects", &abi.AdmitResponse{Allowed: true, Message: `PersistentVolumeClaim objects {"metadata":{"name":"objects"}} set=web`}},
	}
	for _, tt := range answers {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.Admit(context.Background(), admitRequest(tt.name))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}

	// The hostile answers: each fails the call with a CallError of its
	// kind, and the module serves the next call.
	hostile := []struct {
		name string
		kind runtime.ErrorKind
		msg  string
	}{
		{"manyops", runtime.KindOutput, "admit.patch holds 5000 operations, more than the limit of 4096"},
		{"badutf8", runtime.KindOutput, "admit.message: invalid UTF-8"},
		{"oversize", runtime.KindOutput, "larger than the 1 MiB limit"},
		{"result", runtime.KindOutput, "no answer to the admit hook"},
		{"noanswer", runtime.KindOutput, "no answer to the admit hook"},
		{"loop", runtime.KindDeadline, "deadline"},
		{"garbage", runtime.KindOutput, "malformed"},
		{"trap", runtime.KindTrap, "guest"},
	}
	for _, tt := range hostile {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Admit(context.Background(), admitRequest(tt.name))
			var ce *runtime.CallError
			require.ErrorAs(t, err, &ce)
			require.ErrorIs(t, err, tt.kind)
			require.Contains(t, err.Error(), tt.msg)
			got, err := m.Admit(context.Background(), admitRequest("allow"))
			require.NoError(t, err)
			require.True(t, got.Allowed)
		})
	}

	t.Run("reconcile answering as admit", func(t *testing.T) {
		_, err := m.Reconcile(context.Background(), request("default/admit-answer"))
		require.ErrorIs(t, err, runtime.KindOutput)
		require.Contains(t, err.Error(), "no answer to the reconcile hook")
	})
}

func TestAdmitOnA10Module(t *testing.T) {
	m := load(t, "good", runtime.Limits{}, runtime.Options{})
	require.False(t, m.HasHook(abi.HookAdmit))
	_, err := m.Admit(context.Background(), admitRequest("allow"))
	require.ErrorIs(t, err, abi.ErrNoHook)
	_, err = m.Reconcile(context.Background(), request("default/ok"))
	require.NoError(t, err, "a 1.0 module reconciles unchanged")
}

// TestAdmitDoesNotQueueBehindReconcile holds the module's only reconcile
// instance (Instances: 1) in a looping call and admits meanwhile: the admit
// hook has a pool of its own, in a native module and in an Extism plugin
// alike. The reconcile is still running when the admit is answered.
func TestAdmitDoesNotQueueBehindReconcile(t *testing.T) {
	limits := runtime.Limits{Instances: 1, Deadline: time.Hour}
	modules := []struct {
		name string
		load func(t *testing.T) runtime.Loaded
	}{
		{"native", func(t *testing.T) runtime.Loaded { return load(t, "admitter", limits, runtime.Options{}) }},
		{"extism", func(t *testing.T) runtime.Loaded {
			p, err := newEngine(t, runtime.Options{}).LoadAny(context.Background(), "admit.wasm",
				hostile.ExtismAdmittingWhileReconcileLoops([]byte(`{"status":0,"admit":{"allowed":true}}`)), limits)
			require.NoError(t, err)
			return p
		}},
	}
	for _, mod := range modules {
		t.Run(mod.name, func(t *testing.T) {
			m := mod.load(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := m.Reconcile(ctx, request("default/loop"))
				done <- err
			}()
			for m.Stats().Busy == 0 {
				time.Sleep(time.Millisecond)
			}
			got, err := m.Admit(context.Background(), admitRequest("allow"))
			require.NoError(t, err)
			require.True(t, got.Allowed)
			select {
			case err := <-done:
				t.Fatalf("the reconcile ended before the admit was answered: %v", err)
			default:
			}
			cancel()
			require.True(t, errors.Is(<-done, runtime.KindDeadline))
		})
	}
}
