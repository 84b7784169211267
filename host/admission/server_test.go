package admission_test

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
	kruntime "github.com/kubeplug/kubeplug/host/runtime"
)

var metaAdmissionReview = metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}

func namedClaim(name string) *admissionv1.AdmissionRequest {
	r := claimCreate()
	r.Name = name
	r.Object = runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"` + name + `","labels":{"app":"web"}}}`)}
	return r
}

// TestWebhookWithHostileGuest calls a real wasm guest through the webhook
// server over HTTPS on loopback, for each of its answers: the module's own,
// and the failure policy's for each way it misbehaves.
func TestWebhookWithHostileGuest(t *testing.T) {
	guest := loadGuest(t, "admitter", kruntime.Limits{Deadline: time.Hour})
	fail := &admission.Module{Name: "fail", Admitter: guest, Granted: labelsGrant}
	ignore := &admission.Module{Name: "ignore", Admitter: guest, FailurePolicy: admission.Ignore}
	s := serve(t, admission.NewHandler(&admission.Reviewer{}, []*admission.Module{fail, ignore}))

	tests := []struct {
		name, module string
		allowed      bool
		patched      bool
		message      string
	}{
		{"allow", "fail", true, false, ""},
		{"deny", "fail", false, false, "denied default/deny"},
		{"patch", "fail", true, true, ""},
		{"patch", "ignore", true, false, ""}, // granted nothing: the patch is refused, Ignore allows
		// The guest loops; the API server's timeout (2s) less the margin
		// ends the call, though the module's own deadline is an hour.
		{"loop", "fail", false, false, "failurePolicy Fail denies the request: module call failed"},
		{"loop", "ignore", true, false, ""},
		{"garbage", "fail", false, false, "malformed"},
		{"manyops", "fail", false, false, "admit.patch holds 5000 operations, more than the limit of 4096"},
		{"badutf8", "fail", false, false, "invalid UTF-8"},
		{"oversize", "fail", false, false, "larger than the 1 MiB limit"},
		{"badpatch", "fail", false, false, "patch refused: the patch does not apply"},
		{"badpatch", "ignore", true, false, ""},
		{"result", "fail", false, false, "no answer to the admit hook"},
		{"trap", "fail", false, false, "guest"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.module, func(t *testing.T) {
			code, review, body := s.post(t, admission.PathPrefix+tt.module+"?timeout=2s", reviewBody(t, namedClaim(tt.name)))
			require.Equal(t, http.StatusOK, code, body)
			resp := review.Response
			require.Equal(t, "uid-1", string(resp.UID))
			require.Equal(t, metaAdmissionReview, review.TypeMeta)
			require.Equal(t, tt.allowed, resp.Allowed, body)
			require.Equal(t, tt.patched, resp.Patch != nil, body)
			if tt.patched {
				require.JSONEq(t, `[{"op":"add","path":"/metadata/labels/tier","value":"gold"}]`, string(resp.Patch))
			}
			if tt.message != "" {
				require.Contains(t, resp.Result.Message, tt.message)
			}
		})
	}
}

func TestWebhookRefusesWhatIsNotAReview(t *testing.T) {
	s := serve(t, admission.NewHandler(&admission.Reviewer{}, []*admission.Module{{Name: "m", Admitter: &fakeAdmitter{rules: claimRules, answer: &abi.AdmitResponse{Allowed: true}}}}))
	good := reviewBody(t, claimCreate())
	tests := []struct {
		name, path, contentType string
		body                    []byte
		code                    int
		msg                     string
	}{
		{"unknown module", "/admit/other", "application/json", good, http.StatusNotFound, `no admitting module "other"`},
		{"not json", "/admit/m", "application/json", []byte("{"), http.StatusBadRequest, "bad AdmissionReview"},
		{"v1beta1", "/admit/m", "application/json", []byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{}}`), http.StatusBadRequest, "admissionReviewVersions: [v1]"},
		{"no request", "/admit/m", "application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), http.StatusBadRequest, "no request"},
		{"content type", "/admit/m", "text/plain", good, http.StatusBadRequest, "want application/json"},
		{"too large", "/admit/m", "application/json", bytes.Repeat([]byte(" "), 8<<20), http.StatusRequestEntityTooLarge, "more than the limit of 7340032"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := s.client.Post("https://"+s.srv.Addr()+tt.path, tt.contentType, bytes.NewReader(tt.body))
			require.NoError(t, err)
			defer resp.Body.Close()
			buf := new(bytes.Buffer)
			_, _ = buf.ReadFrom(resp.Body)
			require.Equal(t, tt.code, resp.StatusCode, buf.String())
			require.Contains(t, buf.String(), tt.msg)
		})
	}
}

// TestCertificateReload replaces the serving certificate's files and waits
// until new connections are served with the new certificate.
func TestCertificateReload(t *testing.T) {
	s := serve(t, http.NotFoundHandler())
	served := func() []byte {
		conn, err := tls.Dial("tcp", s.srv.Addr(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the certificate only
		require.NoError(t, err)
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Raw
	}
	before := served()
	writeCert(t, s.certDir)
	want, err := tls.LoadX509KeyPair(filepath.Join(s.certDir, "tls.crt"), filepath.Join(s.certDir, "tls.key"))
	require.NoError(t, err)
	require.NotEqual(t, before, want.Certificate[0])
	deadline := time.Now().Add(30 * time.Second) // a bound on a hung test, not a timing assertion
	for !bytes.Equal(served(), want.Certificate[0]) {
		if time.Now().After(deadline) {
			t.Fatal("the new certificate was not served after the files changed")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A pair that does not load keeps the current one in service.
	require.NoError(t, os.WriteFile(filepath.Join(s.certDir, "tls.crt"), []byte("garbage"), 0o600))
	require.Equal(t, want.Certificate[0], served())
}

func TestListenRefusesAMissingCertificate(t *testing.T) {
	_, err := admission.Listen("127.0.0.1:0", t.TempDir(), http.NotFoundHandler(), nil, admission.DefaultServerLimits())
	require.ErrorContains(t, err, "webhook certificate: load")
	require.ErrorContains(t, err, "--webhook-cert-dir")
}
