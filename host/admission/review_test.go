package admission_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
)

// fakeAdmitter answers with a fixed answer or error, and records requests.
type fakeAdmitter struct {
	mutates bool
	rules   []abi.AdmissionRule
	answer  *abi.AdmitResponse
	err     error
	seen    []*abi.AdmitRequest
}

// claimRules registers claim creation, what claimCreate asks.
var claimRules = []abi.AdmissionRule{{Operations: []string{"CREATE"}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims"}}}

func (f *fakeAdmitter) Manifest() abi.Manifest {
	if f.rules == nil && !f.mutates {
		return abi.Manifest{Name: "fake", Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile}}
	}
	return abi.Manifest{Name: "fake", Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookAdmit},
		Admission: &abi.Admission{Mutates: f.mutates, Rules: f.rules, MatchConditions: []abi.MatchCondition{{Name: "c", Expression: "true"}}}}
}

func (f *fakeAdmitter) Admit(_ context.Context, req *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	f.seen = append(f.seen, req)
	return f.answer, f.err
}

const claimJSON = `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data-web-0","labels":{"app":"web"}},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`

func claimCreate() *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		UID:       "uid-1",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"},
		Namespace: "default", Name: "data-web-0",
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: []byte(claimJSON)},
	}
}

var labelsGrant = []abi.Capability{{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}, Paths: []string{"/metadata/labels"}}}

func op(o, path, value string) abi.PatchOperation {
	p := abi.PatchOperation{Op: o, Path: path}
	if value != "" {
		p.Value = []byte(value)
	}
	return p
}

func TestReview(t *testing.T) {
	tests := []struct {
		name    string
		fake    fakeAdmitter
		policy  string
		allowed bool
		message string // of the response's status, "" for none
		result  string
		object  string // after the patch; "" for none
		warning string
	}{
		{name: "allow", fake: fakeAdmitter{answer: &abi.AdmitResponse{Allowed: true}}, allowed: true, result: "allowed", object: claimJSON},
		{name: "deny", fake: fakeAdmitter{answer: &abi.AdmitResponse{Message: "no"}}, message: "no", result: "denied"},
		{
			name:    "patch applied",
			fake:    fakeAdmitter{mutates: true, answer: &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{op("add", "/metadata/labels/tier", `"gold"`)}}},
			allowed: true, result: "mutated",
			object: `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data-web-0","labels":{"app":"web","tier":"gold"}},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`,
		},
		{
			name:    "patch beyond the grant, Fail",
			fake:    fakeAdmitter{mutates: true, answer: &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{op("replace", "/spec/resources/requests/storage", `"9Gi"`)}}},
			message: `patch[0]: replace "/spec/resources/requests/storage" on persistentvolumeclaims is not allowed`, result: "failed-closed",
		},
		{
			name:    "patch beyond the grant, Ignore",
			fake:    fakeAdmitter{mutates: true, answer: &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{op("move", "/metadata/labels/x", "")}}},
			policy:  admission.Ignore,
			allowed: true, result: "failed-open", object: claimJSON, warning: "failurePolicy Ignore allowed the request unchanged",
		},
		{
			name:    "patch that does not apply",
			fake:    fakeAdmitter{mutates: true, answer: &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{op("remove", "/metadata/labels/nope", "")}}},
			message: "the patch does not apply to the PersistentVolumeClaim default/data-web-0", result: "failed-closed",
		},
		{
			name:    "value that is not JSON",
			fake:    fakeAdmitter{mutates: true, answer: &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{op("add", "/metadata/labels/a", `{`)}}},
			message: "value is not JSON", result: "failed-closed",
		},
		{
			name:    "unknown op",
			fake:    fakeAdmitter{mutates: true, answer: &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{op("merge", "/metadata/labels", `{}`)}}},
			message: `op "merge" is not an RFC 6902 operation`, result: "failed-closed",
		},
		{
			name:    "patch from a validating module",
			fake:    fakeAdmitter{answer: &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{op("add", "/metadata/labels/a", `"b"`)}}},
			message: "does not say admission.mutates", result: "failed-closed",
		},
		{
			name:    "patch with a denial",
			fake:    fakeAdmitter{mutates: true, answer: &abi.AdmitResponse{Patch: []abi.PatchOperation{op("add", "/metadata/labels/a", `"b"`)}}},
			message: "a denial carries no patch", result: "failed-closed",
		},
		{
			name:    "call failed, Fail",
			fake:    fakeAdmitter{err: errors.New("deadline exceeded after 1s\nstack")},
			message: "kubeplug module m failed and its failurePolicy Fail denies the request: module call failed: deadline exceeded after 1s", result: "failed-closed",
		},
		{
			name:   "call failed, Ignore",
			fake:   fakeAdmitter{err: errors.New("trap")},
			policy: admission.Ignore, allowed: true, result: "failed-open", object: claimJSON, warning: "module call failed: trap",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &admission.Reviewer{NamespaceLabels: func(string) (map[string]string, error) { return map[string]string{"storage-policy": "strict"}, nil }}
			tt.fake.rules = claimRules
			m := &admission.Module{Name: "m", Admitter: &tt.fake, Granted: labelsGrant, FailurePolicy: tt.policy}
			o := r.Review(context.Background(), m, claimCreate(), 0)
			require.Equal(t, "uid-1", string(o.Response.UID))
			require.Equal(t, tt.allowed, o.Response.Allowed)
			require.Equal(t, tt.result, o.Result())
			if tt.message != "" {
				require.Contains(t, o.Response.Result.Message, tt.message)
			}
			if tt.object != "" {
				require.JSONEq(t, tt.object, string(o.Object))
			} else {
				require.Nil(t, o.Object)
			}
			if tt.warning != "" {
				require.Len(t, o.Response.Warnings, 1)
				require.Contains(t, o.Response.Warnings[0], tt.warning)
			}
			if o.Response.Patch != nil {
				require.Equal(t, admissionv1.PatchTypeJSONPatch, *o.Response.PatchType)
			}
			require.Len(t, tt.fake.seen, 1)
			in := tt.fake.seen[0]
			require.Equal(t, "CREATE", in.Operation)
			require.Equal(t, "data-web-0", in.Object.PersistentVolumeClaim.Metadata.Name)
			require.Equal(t, "1Gi", in.Object.PersistentVolumeClaim.Spec.Resources.Requests["storage"])
			require.JSONEq(t, claimJSON, string(in.Object.JSON))
			require.Equal(t, map[string]string{"storage-policy": "strict"}, in.NamespaceLabels)
		})
	}
}

func TestReviewBoundsTheCallByTheAPIServersTimeout(t *testing.T) {
	var deadline, called time.Time
	m := &admission.Module{Name: "m", Admitter: admitFunc(func(ctx context.Context) {
		deadline, _ = ctx.Deadline()
		called = time.Now()
	})}
	start := time.Now()
	(&admission.Reviewer{}).Review(context.Background(), m, claimCreate(), 2*time.Second)
	require.False(t, deadline.IsZero())
	require.False(t, deadline.Before(start.Add(1500*time.Millisecond)) || deadline.After(called.Add(1500*time.Millisecond)),
		"a quarter of the 2s timeout, 500ms, is kept for the answer to travel back: the call's deadline is %s after the review started", deadline.Sub(start))
}

type admitFunc func(ctx context.Context)

func (f admitFunc) Manifest() abi.Manifest {
	return abi.Manifest{Hooks: []string{abi.HookAdmit}, Admission: &abi.Admission{Rules: claimRules}}
}
func (f admitFunc) Admit(ctx context.Context, _ *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	f(ctx)
	return &abi.AdmitResponse{Allowed: true}, nil
}
