package controlplane

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"

	"github.com/kubeplug/kubeplug/e2e/internal/tcpproxy"
)

// apiServer is what the control plane keeps to run kube-apiserver again
// as the same server to its clients: its etcd, where its certificates and
// credentials are, and the proxy whose address the clients use.
type apiServer struct {
	etcdURL string
	dir     string // --cert-dir and the token file
	logf    func(string, ...any)
	front   *tcpproxy.Proxy

	running *apiserver.TestServer // nil while stopped
	tb      *tb
	stopped bool // by Stop: no more restarts
}

// adminUser is who Config authenticates as: a member of system:masters,
// by a static token that every kube-apiserver this control plane starts
// accepts, so that a client made before a restart works after it.
const adminUser = "kubeplug-admin"

// startAPIServer starts kube-apiserver on etcdURL for the first time: it
// makes its certificate directory and admin token, puts the proxy in
// front, and sets cp.Config and cp.ServingCA.
func (cp *ControlPlane) startAPIServer(etcdURL string, logf func(string, ...any)) error {
	a := &apiServer{etcdURL: etcdURL, dir: filepath.Join(cp.Dir, "kube-apiserver"), logf: logf}
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return fmt.Errorf("controlplane: admin token: %w", err)
	}
	token := hex.EncodeToString(secret)
	// --token-auth-file's CSV: token,user,uid,groups.
	line := fmt.Sprintf("%s,%s,%s,system:masters\n", token, adminUser, adminUser)
	if err := os.WriteFile(a.tokenFile(), []byte(line), 0o600); err != nil {
		return fmt.Errorf("controlplane: admin token: %w", err)
	}
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	cp.api = a
	server, err := a.start()
	if err != nil {
		return err
	}
	// Read from --cert-dir, where kube-apiserver wrote the self-signed
	// certificate on its first start and reads it on every later one.
	cp.ServingCA, err = os.ReadFile(server.ServerOpts.SecureServing.ServerCert.CertKey.CertFile)
	if err != nil {
		return fmt.Errorf("controlplane: kube-apiserver's serving certificate: %w", err)
	}
	target, err := hostPort(server.ClientConfig.Host)
	if err != nil {
		return err
	}
	if a.front, err = tcpproxy.New(target); err != nil {
		return fmt.Errorf("controlplane: proxy in front of kube-apiserver: %w", err)
	}
	// The loopback configuration's settings (content type, rate limits)
	// with what outlives a restart: the proxy's address, the serving
	// certificate, the static token.
	cfg := rest.CopyConfig(server.ClientConfig)
	cfg.Host = a.front.URL()
	cfg.BearerToken, cfg.BearerTokenFile = token, ""
	cfg.TLSClientConfig = rest.TLSClientConfig{CAData: cp.ServingCA}
	cp.Config = cfg
	return nil
}

func (a *apiServer) tokenFile() string { return filepath.Join(a.dir, "tokens.csv") }

// start runs a kube-apiserver on a.etcdURL and returns once it answers;
// the caller points the proxy at it.
func (a *apiServer) start() (*apiserver.TestServer, error) {
	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{a.etcdURL}
	t := newTB("kube-apiserver", a.logf)
	opt := apiserver.NewDefaultTestServerOptions()
	opt.DisableInvariantChecks = true
	server, err := apiserver.StartTestServer(t, opt, []string{
		// Nothing runs the service-account controller here; with the
		// ServiceAccount admission plugin every pod would be rejected.
		"--disable-admission-plugins=ServiceAccount",
		// As on a real cluster: a client that is not in system:masters
		// gets only what RBAC grants it (see deploy/base/rbac.yaml).
		"--authorization-mode=Node,RBAC",
		"--endpoint-reconciler-type=none",
		// What makes a second start the same server to its clients: the
		// serving certificate generated on the first start is read back
		// from here, and the admin token is the same. (Service-account
		// tokens are signed with the test server's fixed key.)
		"--cert-dir=" + a.dir,
		"--token-auth-file=" + a.tokenFile(),
		// Shutting down, answer new requests 429 with Retry-After until
		// those in flight are done, then give the open connections (the
		// watches) 2s, not the request timeout's 60s, to close.
		"--shutdown-send-retry-after=true",
	}, storage)
	if err != nil {
		t.cleanup()
		return nil, fmt.Errorf("controlplane: kube-apiserver: %w", err)
	}
	a.running, a.tb = &server, t
	return &server, nil
}

// stop tears the running kube-apiserver down, if one runs.
func (a *apiServer) stop() {
	if a.running != nil {
		a.running.TearDownFn()
		a.tb.cleanup()
		a.running, a.tb = nil, nil
	}
}

func hostPort(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("controlplane: kube-apiserver's address %q: %w", rawURL, err)
	}
	return u.Host, nil
}

// stopAPIServer stops kube-apiserver and the proxy in front of it for good.
func (cp *ControlPlane) stopAPIServer() {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	a := cp.api
	if a == nil {
		return
	}
	a.stopped = true
	a.stop()
	if a.front != nil {
		a.front.Close()
	}
}

// RestartAPIServer restarts kube-apiserver as an operator restarting its
// process does: the running server shuts down (its watches end, its
// connections close), and a new one starts on the same etcd, with the same
// storage prefix, serving certificate and credentials, behind the same
// address. What the old one held in memory is gone: its watch caches, its
// informers, its in-flight requests. Clients of Config or Kubeconfig
// (kube-controller-manager among them) see their connections closed, new
// ones refused while no server runs, and then go on; their watches must be
// started again, as from any restarted server. It returns once the new
// server answers and its default namespace exists. ctx is checked before
// the server is stopped; once it is, a new one is started whatever ctx
// says (a control plane left without a server would fail everything after
// it), bounded by kube-apiserver's own test server: a minute to become
// healthy. When the new server does not start, the control plane is left
// without one and the error says why.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	a := cp.api
	if a == nil || a.stopped {
		return errors.New("controlplane: RestartAPIServer after Stop")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("controlplane: restart kube-apiserver: %w", err)
	}
	// Graceful shutdown first, so that clients see what a terminating
	// server sends them; then close whatever the proxy still holds and
	// refuse new connections until the new server answers.
	a.stop()
	a.front.Cut()
	server, err := a.start()
	if err != nil {
		return err
	}
	target, err := hostPort(server.ClientConfig.Host)
	if err != nil {
		return err
	}
	a.front.SetTarget(target)
	a.front.Heal()
	a.logf("kube-apiserver restarted at %s, serving at %s", target, cp.Config.Host)
	return nil
}
