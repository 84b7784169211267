package admission_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/client-go/util/cert"

	"github.com/kubeplug/kubeplug/host/admission"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// The wasm guests these tests run, built once per test binary: the runtime
// tests' admitter (well-behaved and hostile answers by request name) and the
// storagepolicy example.
var guests = map[string]string{
	"admitter":      "./runtime/testdata/guests/admitter",
	"storagepolicy": "../examples/storagepolicy",
}

var (
	buildOnce sync.Once
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// loadGuest loads a test guest into an engine closed with the test.
func loadGuest(t testing.TB, name string, limits runtime.Limits) *runtime.Module {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "kubeplug-admission-guests-"); buildErr != nil {
			return
		}
		for g, src := range guests {
			cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", filepath.Join(buildDir, g+".wasm"), src)
			cmd.Dir = ".."
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("build %s: %v\n%s", g, err, out)
				return
			}
		}
	})
	require.NoError(t, buildErr)
	wasm, err := os.ReadFile(filepath.Join(buildDir, name+".wasm"))
	require.NoError(t, err)
	eng, err := runtime.NewEngine(context.Background(), runtime.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	m, err := eng.Load(context.Background(), name+".wasm", wasm, limits)
	require.NoError(t, err)
	return m
}

// tlsServer serves h over real HTTPS on loopback with a serving certificate
// in a directory of its own, and returns a client that trusts it.
type tlsServer struct {
	srv     *admission.Server
	certDir string
	client  *http.Client
}

func serve(t testing.TB, h http.Handler) *tlsServer {
	t.Helper()
	return serveWithin(t, h, admission.DefaultServerLimits())
}

// serveWithin is serve with the server's limits given.
func serveWithin(t testing.TB, h http.Handler, limits admission.ServerLimits) *tlsServer {
	t.Helper()
	dir := t.TempDir()
	writeCert(t, dir)
	srv, err := admission.Listen("127.0.0.1:0", dir, h, slog.New(slog.DiscardHandler), limits)
	require.NoError(t, err)
	go func() { _ = srv.Serve() }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	pool := x509.NewCertPool()
	crt, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	require.NoError(t, err)
	require.True(t, pool.AppendCertsFromPEM(crt))
	return &tlsServer{srv: srv, certDir: dir, client: &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool},
		MaxIdleConnsPerHost: 4,
	}}}
}

// writeCert writes a new CA-signed serving certificate for 127.0.0.1 into
// dir, as tls.crt and tls.key.
func writeCert(t testing.TB, dir string) {
	t.Helper()
	crt, key, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600))
}

// post sends review to path (with the API server's ?timeout=) and decodes
// the answer.
func (s *tlsServer) post(t testing.TB, path string, review []byte) (int, *admissionv1.AdmissionReview, string) {
	t.Helper()
	resp, err := s.client.Post("https://"+s.srv.Addr()+path, "application/json", bytes.NewReader(review))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil, string(body)
	}
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(body, &out))
	return resp.StatusCode, &out, string(body)
}

func reviewBody(t testing.TB, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metaAdmissionReview,
		Request:  req,
	})
	require.NoError(t, err)
	return b
}
