package admission_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
)

// bigLabel is the value of a 60 KB label, as JSON.
var bigLabel = `"` + strings.Repeat("x", 60<<10) + `"`

// copyBomb adds a 60 KB label and copies the labels into themselves n
// times: each copy doubles them.
func copyBomb(n int) []abi.PatchOperation {
	ops := []abi.PatchOperation{op("add", "/metadata/labels/big", bigLabel)}
	for i := range n {
		ops = append(ops, abi.PatchOperation{Op: abi.PatchCopy, From: "/metadata/labels", Path: fmt.Sprintf("/metadata/labels/c%d", i)})
	}
	return ops
}

// copyChurn copies a 400 KB label and removes the copy, n times: the
// object never grows, the bytes copied do.
func copyChurn(n int) []abi.PatchOperation {
	ops := []abi.PatchOperation{op("add", "/metadata/labels/big", `"`+strings.Repeat("x", 400<<10)+`"`)}
	for range n {
		ops = append(ops, abi.PatchOperation{Op: abi.PatchCopy, From: "/metadata/labels/big", Path: "/metadata/labels/c"},
			op("remove", "/metadata/labels/c", ""))
	}
	return ops
}

// claimWith is a claim create whose object has the given finalizers and
// annotations.
func claimWith(finalizers int, annotation int) func() []byte {
	return func() []byte {
		meta := map[string]any{"name": "data-web-0", "labels": map[string]string{"app": "web"}}
		if finalizers > 0 {
			f := make([]string, finalizers)
			for i := range f {
				f[i] = "f"
			}
			meta["finalizers"] = f
		}
		if annotation > 0 {
			meta["annotations"] = map[string]string{"a": strings.Repeat("y", annotation)}
		}
		b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta})
		return b
	}
}

// TestPatchBudget holds patches to the patch budget: each case is refused by
// one bound, naming the module and the limit, and answered by the failure
// policy; each would apply (or exhaust the host) without its bound.
func TestPatchBudget(t *testing.T) {
	grant := []abi.Capability{{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"},
		Paths: []string{"/metadata/labels", "/metadata/finalizers", "/metadata/annotations"}}}
	removeFirst := make([]abi.PatchOperation, 3000)
	for i := range removeFirst {
		removeFirst[i] = op("remove", "/metadata/finalizers/0", "")
	}
	tooMany := make([]abi.PatchOperation, admission.MaxPatchOperations+1)
	for i := range tooMany {
		tooMany[i] = op("test", "/metadata/name", `"data-web-0"`)
	}
	tests := []struct {
		name   string
		object func() []byte // nil: claimJSON
		patch  []abi.PatchOperation
		want   string // "" for a patch within the budget
	}{
		{name: "a copy within the budget", patch: copyBomb(2)},
		{name: "copy bomb", patch: copyBomb(12), want: "patch copies more than the limit of 3145728 bytes"},
		// Two dozen copies with a copy's cost (the limit of bytes copied)
		// are more work than the limit before any is applied.
		{name: "copy bomb of two dozen", patch: copyBomb(24), want: "exceeds the work limit of 67108864"},
		{name: "copy and remove churn", patch: copyChurn(8), want: "patch copies more than the limit of 3145728 bytes"},
		{name: "operations", patch: tooMany, want: "holds 10001 operations, more than the limit of 10000"},
		{name: "patch bytes", patch: []abi.PatchOperation{op("add", "/metadata/labels/big", `"`+strings.Repeat("x", 3<<20)+`"`)},
			want: "patch encodes to 3145783 bytes, more than the limit of 3145728"},
		// 3,000 removals from the front of 500,000 finalizers: each one
		// shifts the array, 3,000 × 4 MB of memory moved.
		{name: "work", object: claimWith(500_000, 0), patch: removeFirst, want: "exceeds the work limit of 67108864"},
		{name: "patched object", object: claimWith(0, 3<<20-1000),
			patch: []abi.PatchOperation{op("add", "/metadata/labels/big", bigLabel)}, want: "more than the limit of 3145728 for a patched object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeAdmitter{mutates: true, rules: claimRules, answer: &abi.AdmitResponse{Allowed: true, Patch: tt.patch}}
			m := &admission.Module{Name: "bomb", Admitter: fake, Granted: grant}
			req := claimCreate()
			if tt.object != nil {
				req.Object = runtime.RawExtension{Raw: tt.object()}
			}
			o := (&admission.Reviewer{}).Review(context.Background(), m, req, time.Hour)
			if tt.want == "" {
				require.NoError(t, o.Failure)
				require.Equal(t, "mutated", o.Result())
				return
			}
			require.ErrorIs(t, o.Failure, admission.ErrPatch)
			require.ErrorContains(t, o.Failure, tt.want)
			require.False(t, o.Response.Allowed)
			require.Contains(t, o.Response.Result.Message, `module "bomb"`, "the answer names the module")
			require.Contains(t, o.Response.Result.Message, tt.want, "the answer names the limit")
		})
	}
}

// TestReviewRefusesWhatTheModuleDidNotRegister: a review the API server
// would not have sent the module (another resource, operation, version,
// subresource or scope) is answered by the failure policy and never reaches
// the module.
func TestReviewRefusesWhatTheModuleDidNotRegister(t *testing.T) {
	secret := claimCreate()
	secret.Kind.Kind, secret.Resource.Resource = "Secret", "secrets"
	secret.Object = runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":"c2VjcmV0"}}`)}
	update := claimCreate()
	update.Operation = "UPDATE"
	v2 := claimCreate()
	v2.Resource.Version = "v2"
	status := claimCreate()
	status.SubResource = "status"
	wildcard := []abi.AdmissionRule{{Operations: []string{"*"}, APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}
	lease := claimCreate()
	lease.Kind = metav1.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}
	lease.Resource = metav1.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	lease.Object = runtime.RawExtension{Raw: []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"kubeplug"}}`)}
	disguised := claimCreate() // a Secret, sent as a claim's review
	disguised.Kind.Kind = "Secret"
	disguised.Object = secret.Object
	tests := []struct {
		name  string
		rules []abi.AdmissionRule
		req   func() *admissionv1.AdmissionRequest
		seen  bool
		why   string // of a request not seen
	}{
		{"a secret to a claims-only module", claimRules, func() *admissionv1.AdmissionRequest { return secret }, false, "a request for secrets"},
		{"an update to a create-only module", claimRules, func() *admissionv1.AdmissionRequest { return update }, false, ""},
		{"another version", claimRules, func() *admissionv1.AdmissionRequest { return v2 }, false, ""},
		{"a subresource", claimRules, func() *admissionv1.AdmissionRequest { return status }, false, ""},
		{"a subresource to * (no subresources)", wildcard, func() *admissionv1.AdmissionRequest { return status }, false, ""},
		{"a cluster-scoped rule", []abi.AdmissionRule{{Operations: []string{"CREATE"}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims"}, Scope: "Cluster"}},
			claimCreate, false, ""},
		{"registered", claimRules, claimCreate, true, ""},
		{"*", wildcard, claimCreate, true, ""},
		{"a secret to *", wildcard, func() *admissionv1.AdmissionRequest { return secret }, false, "a request for secrets, which the host never sends to a module"},
		{"a lease to *", wildcard, func() *admissionv1.AdmissionRequest { return lease }, false, "a request for leases, which the host never sends to a module"},
		{"a secret as a claim", claimRules, func() *admissionv1.AdmissionRequest { return disguised }, false, "a request for secrets"},
		{"*/status", []abi.AdmissionRule{{Operations: []string{"CREATE"}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"*/status"}}},
			func() *admissionv1.AdmissionRequest { return status }, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeAdmitter{rules: tt.rules, answer: &abi.AdmitResponse{Allowed: true}}
			m := &admission.Module{Name: "claims", Admitter: fake}
			o := (&admission.Reviewer{}).Review(context.Background(), m, tt.req(), time.Hour)
			if tt.seen {
				require.NoError(t, o.Failure)
				require.Len(t, fake.seen, 1)
				return
			}
			require.Empty(t, fake.seen, "the module saw a request it did not register")
			require.ErrorIs(t, o.Failure, admission.ErrRequest)
			why := tt.why
			if why == "" {
				why = "matches none of the module's admission rules"
			}
			require.ErrorContains(t, o.Failure, why)
			require.NotContains(t, o.Response.Result.Message, "c2VjcmV0", "the object's data is not in the answer")
			require.False(t, o.Response.Allowed)
		})
	}
}

// blockingAdmitter answers only when released, whatever its context says:
// a call that overruns its deadline (a starved CPU, a guest between
// checkpoints).
type blockingAdmitter struct{ release chan struct{} }

func (b *blockingAdmitter) Manifest() abi.Manifest {
	return abi.Manifest{Hooks: []string{abi.HookAdmit}, Admission: &abi.Admission{Rules: claimRules}}
}

func (b *blockingAdmitter) Admit(context.Context, *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	<-b.release
	return &abi.AdmitResponse{Allowed: true}, nil
}

// TestReviewAnswersAtTheDeadlineWithoutTheCall: Review does not wait for a
// call that overruns the deadline; the failure policy answers.
func TestReviewAnswersAtTheDeadlineWithoutTheCall(t *testing.T) {
	for _, policy := range []string{admission.Fail, admission.Ignore} {
		t.Run(policy, func(t *testing.T) {
			b := &blockingAdmitter{release: make(chan struct{})}
			// Released after a bound on a hung test; without the
			// containment Review returns the module's late answer then.
			timer := time.AfterFunc(30*time.Second, func() { close(b.release) })
			t.Cleanup(func() {
				if timer.Stop() {
					close(b.release)
				}
			})
			m := &admission.Module{Name: "slow", Admitter: b, FailurePolicy: policy}
			o := (&admission.Reviewer{}).Review(context.Background(), m, claimCreate(), time.Second)
			require.ErrorIs(t, o.Failure, admission.ErrCall)
			require.ErrorContains(t, o.Failure, "no answer within 500ms of the API server's 1s timeout")
			require.Equal(t, policy == admission.Ignore, o.Response.Allowed)
		})
	}
}
