package admission

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
)

// admitterFunc answers every review with what answer returns.
type admitterFunc struct {
	rules  []abi.AdmissionRule
	answer func(*abi.AdmitRequest) *abi.AdmitResponse
}

func (a admitterFunc) Manifest() abi.Manifest {
	return abi.Manifest{Name: "f", Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookAdmit},
		Admission: &abi.Admission{Mutates: true, Rules: a.rules}}
}

func (a admitterFunc) Admit(_ context.Context, req *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	return a.answer(req), nil
}

var anyRule = []abi.AdmissionRule{{Operations: []string{"*"}, APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}

// repeat is n copies of s, comma-separated.
func repeat(s string, n int) string { return strings.TrimSuffix(strings.Repeat(s+",", n), ",") }

// reviewOf is an AdmissionReview body for an object of kind and resource.
func reviewOf(kind, group, resource, object string) string {
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"` + group + `","version":"v1","kind":"` + kind +
		`"},"resource":{"group":"` + group + `","version":"v1","resource":"` + resource + `"},"operation":"CREATE","namespace":"ns","name":"x","object":` + object + `}}`
}

// Each review is charged, before each step, at least what the step then
// allocates: the charge bounds the memory of reviews in flight only if it
// is never less than what they take. Measured for the costliest shapes of
// input (values that decode to large structs, long strings, maps) and of
// patch (a large value copied, many operations).
func TestReviewChargeCoversWhatItAllocates(t *testing.T) {
	const n = 50000
	claim := func(meta, spec string) string {
		return reviewOf("PersistentVolumeClaim", "", "persistentvolumeclaims", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"x"`+meta+`},"spec":{"resources":{"requests":{"storage":"1Gi"}}`+spec+`}}`)
	}
	labels := func() string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"l%d":"v"`, i)
		}
		return b.String()
	}()
	allow := func(*abi.AdmitRequest) *abi.AdmitResponse { return &abi.AdmitResponse{Allowed: true} }
	bigValue := `"` + strings.Repeat("v", 1000000) + `"`
	for _, tc := range []struct {
		name   string
		body   string
		answer func(*abi.AdmitRequest) *abi.AdmitResponse
	}{
		{"owner references", claim(`,"ownerReferences":[`+repeat(`{}`, n)+`]`, ""), allow},
		{"managed fields", claim(`,"managedFields":[`+repeat(`{}`, n)+`]`, ""), allow},
		{"labels", claim(`,"labels":{`+labels+`}`, ""), allow},
		{"access modes", claim("", `,"accessModes":[`+repeat(`""`, n)+`]`), allow},
		{"a long annotation", claim(`,"annotations":{"a":"`+strings.Repeat("a", 3<<20)+`"}`, ""), allow},
		{"containers", reviewOf("Pod", "", "pods", `{"metadata":{"name":"x"},"spec":{"containers":[`+repeat(`{}`, n)+`]}}`), allow},
		{"claim templates", reviewOf("StatefulSet", "apps", "statefulsets", `{"metadata":{"name":"x"},"spec":{"volumeClaimTemplates":[`+repeat(`{}`, n)+`]}}`), allow},
		{"a custom resource", reviewOf("VolumeClaimUpdate", "kubeplug.dev", "volumeclaimupdates", `{"apiVersion":"kubeplug.dev/v1alpha1","kind":"VolumeClaimUpdate","metadata":{"name":"x"},"spec":{"x":[`+repeat(`{"a":[{}]}`, n)+`]}}`), allow},
		{"user extra", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1","kind":"ConfigMap"},"resource":{"version":"v1","resource":"configmaps"},"operation":"CREATE","userInfo":{"extra":{` +
			strings.ReplaceAll(labels, `"v"`, `["v"]`) + `}}}}`, allow},
		{"a value copied twice", claim("", ""), func(*abi.AdmitRequest) *abi.AdmitResponse {
			return &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{
				{Op: abi.PatchAdd, Path: "/metadata/annotations", Value: []byte(`{"a":` + bigValue + `}`)},
				{Op: abi.PatchCopy, From: "/metadata/annotations/a", Path: "/metadata/annotations/b"},
				{Op: abi.PatchCopy, From: "/metadata/annotations/a", Path: "/metadata/annotations/c"},
			}}
		}},
		{"many operations", claim("", ""), func(*abi.AdmitRequest) *abi.AdmitResponse {
			ops := []abi.PatchOperation{{Op: abi.PatchAdd, Path: "/metadata/labels", Value: []byte(`{}`)}}
			for i := range 500 {
				ops = append(ops, abi.PatchOperation{Op: abi.PatchAdd, Path: fmt.Sprintf("/metadata/labels/l%d", i), Value: []byte(`"` + strings.Repeat("v", 60) + `"`)})
			}
			return &abi.AdmitResponse{Allowed: true, Patch: ops}
		}},
		{"operations shifting a long array", claim("", `,"accessModes":[`+repeat(`"ReadWriteOnce"`, 3000)+`]`), func(*abi.AdmitRequest) *abi.AdmitResponse {
			var ops []abi.PatchOperation
			for range 500 {
				ops = append(ops, abi.PatchOperation{Op: abi.PatchAdd, Path: "/spec/accessModes/0", Value: []byte(`"ReadOnlyMany"`)})
			}
			return &abi.AdmitResponse{Allowed: true, Patch: ops}
		}},
		{"operations shifting a dense array", reviewOf("VolumeClaimUpdate", "kubeplug.dev", "volumeclaimupdates", `{"apiVersion":"kubeplug.dev/v1alpha1","kind":"VolumeClaimUpdate","metadata":{"name":"x"},"spec":{"x":[`+repeat(`0`, 20000)+`]}}`), func(*abi.AdmitRequest) *abi.AdmitResponse {
			var ops []abi.PatchOperation
			for range 500 {
				ops = append(ops, abi.PatchOperation{Op: abi.PatchAdd, Path: "/spec/x/0", Value: []byte(`1`)})
			}
			return &abi.AdmitResponse{Allowed: true, Patch: ops}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Module{Name: "f", Admitter: admitterFunc{rules: anyRule, answer: tc.answer},
				Granted: []abi.Capability{{Action: abi.CapabilityMutate, Resources: []string{"*"}, Paths: []string{"*"}}}}
			h := NewHandler(&Reviewer{}, []*Module{m})
			c := &charge{mem: newMemory(1 << 40), refs: 2} // the second ref keeps what it held to be read
			c.held = int64(len(tc.body))                   // as bounded charges it
			req := httptest.NewRequest(http.MethodPost, PathPrefix+"f?timeout=30s", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req = req.WithContext(withCharge(req.Context(), c))
			w := httptest.NewRecorder()

			goruntime.GC()
			var before, after goruntime.MemStats
			goruntime.ReadMemStats(&before)
			h.ServeHTTP(w, req)
			goruntime.ReadMemStats(&after)

			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			require.NotContains(t, w.Body.String(), "failurePolicy", "the module answered")
			alloc := int64(after.TotalAlloc - before.TotalAlloc)
			t.Logf("body %d bytes: allocated %d, charged %d (%.2f×)", len(tc.body), alloc, c.held, float64(c.held)/float64(alloc))
			require.GreaterOrEqual(t, c.held, alloc, "the review allocated more than it was charged")
		})
	}
}

// chargedFor is what one review of body, answered by m, is charged in all.
func chargedFor(t *testing.T, m *Module, body string) int64 {
	t.Helper()
	c := &charge{mem: newMemory(1 << 40), refs: 2}
	c.held = int64(len(body))
	w := httptest.NewRecorder()
	NewHandler(&Reviewer{}, []*Module{m}).ServeHTTP(w, reviewRequest(body, "30s").WithContext(withCharge(context.Background(), c)))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	return c.held
}

func reviewRequest(body, timeout string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, PathPrefix+"f?timeout="+timeout, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return req
}

// A review whose module call outlives its answer (the failure policy
// answered at the deadline) keeps its charge until the call has returned:
// the budget pays for memory, and the memory is held until then.
func TestAReviewKeepsItsChargeUntilItsWorkEnds(t *testing.T) {
	body := reviewOf("PersistentVolumeClaim", "", "persistentvolumeclaims", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"x"}}`)
	allow := func(*abi.AdmitRequest) *abi.AdmitResponse { return &abi.AdmitResponse{Allowed: true} }
	one := chargedFor(t, &Module{Name: "f", Admitter: admitterFunc{rules: anyRule, answer: allow}}, body)

	release := make(chan struct{})
	blocked := &Module{Name: "f", FailurePolicy: Ignore, Admitter: admitterFunc{rules: anyRule, answer: func(*abi.AdmitRequest) *abi.AdmitResponse {
		<-release // past the deadline: as a guest between checkpoints on a starved CPU
		return &abi.AdmitResponse{Allowed: true}
	}}}
	lim := DefaultServerLimits()
	lim.MaxInFlightBytes = one + one/2 // one review fits, two do not
	b := &bounded{next: NewHandler(&Reviewer{}, []*Module{blocked}), lim: lim, mem: newMemory(lim.MaxInFlightBytes), log: slogDiscard()}

	first := httptest.NewRecorder()
	b.ServeHTTP(first, reviewRequest(body, "1s"))
	require.Equal(t, http.StatusOK, first.Code)
	require.Contains(t, first.Body.String(), "failurePolicy Ignore allowed the request unchanged", "answered at the deadline by the failure policy")

	second := httptest.NewRecorder()
	b.ServeHTTP(second, reviewRequest(body, "1s"))
	require.Equal(t, http.StatusTooManyRequests, second.Code, "the first review's call still runs, and holds its charge: %s", second.Body.String())

	close(release)
	deadline := time.Now().Add(30 * time.Second)
	for !b.mem.sem.TryAcquire(lim.MaxInFlightBytes) {
		require.False(t, time.Now().After(deadline), "the charge was never given back after the call returned")
		time.Sleep(10 * time.Millisecond)
	}
	b.mem.sem.Release(lim.MaxInFlightBytes)
}

// A patch is charged before it is applied: one that does not fit beside
// the reviews in flight is answered by the failure policy, naming the
// budget, and not applied.
func TestAPatchThatDoesNotFitIsNotApplied(t *testing.T) {
	body := reviewOf("PersistentVolumeClaim", "", "persistentvolumeclaims", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"x"}}`)
	patch := func(*abi.AdmitRequest) *abi.AdmitResponse {
		return &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{{Op: abi.PatchAdd, Path: "/metadata/labels", Value: []byte(`{"a":"` + strings.Repeat("v", 100<<10) + `"}`)}}}
	}
	m := &Module{Name: "f", Admitter: admitterFunc{rules: anyRule, answer: patch},
		Granted: []abi.Capability{{Action: abi.CapabilityMutate, Resources: []string{"*"}, Paths: []string{"*"}}}}
	whole := chargedFor(t, m, body)
	withoutPatch := chargedFor(t, &Module{Name: "f", Admitter: admitterFunc{rules: anyRule, answer: func(*abi.AdmitRequest) *abi.AdmitResponse {
		return &abi.AdmitResponse{Allowed: true}
	}}}, body)

	lim := DefaultServerLimits()
	lim.MaxInFlightBytes = whole - 1 // everything but the patch fits
	require.Greater(t, lim.MaxInFlightBytes, withoutPatch)
	b := &bounded{next: NewHandler(&Reviewer{}, []*Module{m}), lim: lim, mem: newMemory(lim.MaxInFlightBytes), log: slogDiscard()}
	w := httptest.NewRecorder()
	b.ServeHTTP(w, reviewRequest(body, "10s"))
	require.Equal(t, http.StatusOK, w.Code)
	out := w.Body.String()
	require.Contains(t, out, "failurePolicy Fail denies the request: over budget: the webhook server holds its limit of")
	require.NotContains(t, out, `"patch"`)
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }
