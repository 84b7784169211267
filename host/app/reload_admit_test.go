package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
	"github.com/kubeplug/kubeplug/host/bench/workload"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// TestReloadAdmitOnly: a module with only an admit hook runs without a
// controller; swapped, the webhook serves the new generation at once and
// the old module is closed, so no review is answered by a closed module
// (which the failure policy, Fail by default, would turn into a denial).
func TestReloadAdmitOnly(t *testing.T) {
	wasm := workload.Guest(t, "examples/storagepolicy")
	dir := t.TempDir()
	mod := filepath.Join(dir, "policy.wasm")
	require.NoError(t, os.WriteFile(mod, wasm, 0o644))
	entry := fmt.Sprintf("modules:\n- path: %s\n  name: policy\n  allow: [{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels]}, {action: admit, resources: [statefulsets]}]\n", mod)
	h := newTestHost(t, entry, set("default", "web"))
	require.Nil(t, h.r.fleet.get("policy"), "an admit-only module has no controller")

	h.r.mu.Lock()
	handler := admission.NewHandler(&admission.Reviewer{Lister: h.c}, admitters(h.r.file, []controller.Module{h.r.applied["policy"].mod}))
	h.r.webhook = handler
	first := h.r.applied["policy"].mod.Runtime
	h.r.mu.Unlock()

	review := func() *admissionv1.AdmissionResponse {
		t.Helper()
		claim := `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data-web-0","namespace":"default"},"spec":{}}`
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID: "uid-1", Operation: admissionv1.Create, Namespace: "default", Name: "data-web-0",
				Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"},
				Resource: metav1.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"},
				Object:   kruntime.RawExtension{Raw: []byte(claim)},
			},
		})
		require.NoError(t, err)
		req := httptest.NewRequest(http.MethodPost, admission.PathPrefix+"policy?timeout=10s", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		var out admissionv1.AdmissionReview
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
		return out.Response
	}
	require.True(t, review().Allowed)

	require.NoError(t, os.WriteFile(mod, variant(wasm, 1), 0o644))
	h.r.Reload("test")
	require.True(t, hasSeries(t, h.m, "policy", "2"))
	require.Nil(t, h.r.fleet.get("policy"))
	second := h.r.applied["policy"].mod.Runtime
	require.NotSame(t, first, second)
	got := review()
	require.True(t, got.Allowed, "the new generation answers: %+v", got.Result)
	require.Eventually(t, func() bool {
		_, err := first.(admission.Admitter).Admit(context.Background(), &abi.AdmitRequest{Operation: abi.OperationCreate})
		return errors.Is(err, runtime.ErrClosed)
	}, 10*time.Second, 10*time.Millisecond, "the old generation is closed")

	// Removed: the webhook no longer serves it.
	warn := filepath.Join(dir, "warn.wasm")
	require.NoError(t, os.WriteFile(warn, workload.Guest(t, "examples/warnretain"), 0o644))
	h.write(t, "host.yaml", []byte(fmt.Sprintf("modules:\n- path: %s\n  name: warn\n%s", warn, allow["examples/warnretain"])))
	h.r.Reload("test")
	require.NotNil(t, h.r.fleet.get("warn"))
	req := httptest.NewRequest(http.MethodPost, admission.PathPrefix+"policy", bytes.NewReader([]byte("{}")))
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusNotFound, rec.Code)
}
