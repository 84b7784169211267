package admission_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
	"github.com/kubeplug/kubeplug/host/memcluster"
	kruntime "github.com/kubeplug/kubeplug/host/runtime"
)

// BenchmarkAdmitRoundTrip measures a claim-create admission through the
// webhook server (real HTTPS on loopback, keep-alive connections as the API
// server's client keeps them) and the storagepolicy module, which finds the
// claim's StatefulSet in the cache and answers with a patch the host checks
// and applies; and the same module's admit hook called directly through
// the runtime, in the same process, as the baseline. Each runs b.N requests
// one after the other; it reports the p50 and p99 of each, and their ratio.
//
//	go test -run '^$' -bench AdmitRoundTrip -benchtime 10000x ./admission
func BenchmarkAdmitRoundTrip(b *testing.B) {
	guest := loadGuest(b, "storagepolicy", kruntime.Limits{})
	cluster := memcluster.New(memcluster.Config{})
	require.NoError(b, cluster.Load(map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec":     map[string]any{"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"}}}},
	}))
	r := &admission.Reviewer{Lister: cluster}
	mod := &admission.Module{Name: "storagepolicy", Admitter: guest, Granted: guest.Manifest().Capabilities}
	s := serve(b, admission.NewHandler(r, []*admission.Module{mod}))
	req := claimCreate()
	req.Object = runtime.RawExtension{Raw: []byte(claimJSON)}
	body := reviewBody(b, req)
	url := admission.PathPrefix + "storagepolicy?timeout=10s"

	// The direct call gets the input the webhook builds, so that the
	// difference is the server, the review and the patch.
	in := &abi.AdmitRequest{
		UID: "uid-1", Operation: "CREATE", Namespace: "default", Name: "data-web-0",
		Kind:        abi.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"},
		Resource:    abi.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"},
		Object:      &abi.AdmitObject{Kind: "PersistentVolumeClaim", PersistentVolumeClaim: &abi.PersistentVolumeClaim{Metadata: abi.ObjectMeta{Name: "data-web-0", Labels: map[string]string{"app": "web"}}}, JSON: []byte(claimJSON)},
		StatefulSet: &abi.StatefulSetSubject{Set: &abi.StatefulSet{Metadata: abi.ObjectMeta{Name: "web", Namespace: "default"}}},
	}
	ans, err := guest.Admit(context.Background(), in)
	require.NoError(b, err)
	require.Len(b, ans.Patch, 1, "the module labels the claim")
	code, review, out := s.post(b, url, body)
	require.Equal(b, http.StatusOK, code, out)
	require.NotNil(b, review.Response.Patch, "the webhook answers with the module's patch: %s", out)

	direct := measure(b, func() {
		if _, err := guest.Admit(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	})
	webhook := measure(b, func() {
		code, review, out := s.post(b, url, body)
		if code != http.StatusOK || review.Response.PatchType == nil || *review.Response.PatchType != admissionv1.PatchTypeJSONPatch {
			b.Fatalf("webhook answered %d: %s", code, out)
		}
	})
	b.ReportMetric(float64(direct.p50.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(direct.p99.Microseconds()), "direct-p99-µs")
	b.ReportMetric(float64(webhook.p50.Microseconds()), "webhook-p50-µs")
	b.ReportMetric(float64(webhook.p99.Microseconds()), "webhook-p99-µs")
	b.ReportMetric(float64(webhook.p50)/float64(direct.p50), "p50-ratio")
	b.ReportMetric(float64(webhook.p99)/float64(direct.p99), "p99-ratio")
}

type percentiles struct{ p50, p99 time.Duration }

// measure runs f b.N times and returns the percentiles of its latency.
func measure(b *testing.B, f func()) percentiles {
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		f()
		lat[i] = time.Since(start)
	}
	b.StopTimer()
	slices.Sort(lat)
	return percentiles{lat[len(lat)/2], lat[len(lat)*99/100]}
}
