package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/internal/portlease"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/yaml"
)

// ServingCert makes a self-signed serving certificate for 127.0.0.1 in a
// temporary directory of t and returns the directory that holds it as
// tls.crt and tls.key, for kubeplug run's --webhook-cert-dir, and a file
// that holds the same certificate as the CA, for kubeplug webhook-config's
// --ca-bundle.
func ServingCert(t testing.TB) (certDir, caFile string) {
	t.Helper()
	certDir, caFile, err := WriteServingCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return certDir, caFile
}

// WriteServingCert is ServingCert for a program that is not a test: it
// writes into dir, which must exist.
func WriteServingCert(dir string) (certDir, caFile string, err error) {
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return "", "", err
	}
	certDir, caFile = filepath.Join(dir, "certs"), filepath.Join(dir, "ca.crt")
	if err := os.Mkdir(certDir, 0o700); err != nil {
		return "", "", err
	}
	for file, b := range map[string][]byte{
		filepath.Join(certDir, "tls.crt"): certPEM,
		filepath.Join(certDir, "tls.key"): keyPEM,
		caFile:                            certPEM,
	} {
		if err := os.WriteFile(file, b, 0o600); err != nil {
			return "", "", err
		}
	}
	return certDir, caFile, nil
}

// FreeAddr returns a loopback address, 127.0.0.1:port, on which nothing
// listened when it looked: for a server the test starts, such as the host's
// webhook server (kubeplug run --webhook-addr).
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := portlease.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// LoopbackAddr is FreeAddr for a program that is not a test.
func LoopbackAddr() (string, error) { return portlease.Addr() }

// Webhooks are the webhook configurations RegisterWebhooks created.
type Webhooks struct {
	// Mutating and Validating are the names of the
	// MutatingWebhookConfigurations and ValidatingWebhookConfigurations.
	Mutating, Validating []string
	// Printed is what kubeplug webhook-config printed, for a test's
	// messages.
	Printed string
}

// RegisterWebhooks registers a host's webhook with the API server as an
// operator would: it runs kubeplug webhook-config --config configPath (the
// host's configuration, e.g. Host.ConfigPath) --url https://addr
// --ca-bundle caFile, creates each MutatingWebhookConfiguration and
// ValidatingWebhookConfiguration it prints, failing t on anything else, and
// deletes them as a cleanup of t: the host they point at stops with the
// test, and a later run on the same control plane registers its own. flags
// are more flags of webhook-config, such as --name NAME when several hosts
// each register their own.
//
// The configurations take effect when the API server's informers see them,
// not when it returns: a test waits for a request to go through them.
func RegisterWebhooks(t testing.TB, c kubernetes.Interface, configPath, addr, caFile string, flags ...string) Webhooks {
	t.Helper()
	bin, err := Kubeplug()
	if err != nil {
		t.Fatal(err)
	}
	w, unregister, err := Register(t.Context(), c, bin, configPath, addr, caFile, flags...)
	t.Cleanup(unregister)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Register is RegisterWebhooks for a program that is not a test (the demo,
// make cluster): bin is the kubeplug binary, and unregister deletes what it
// created, also when it fails half-way.
func Register(ctx context.Context, c kubernetes.Interface, bin, configPath, addr, caFile string, flags ...string) (w Webhooks, unregister func(), err error) {
	var undo []func()
	unregister = func() {
		for _, u := range undo {
			u()
		}
	}
	out, err := exec.Command(bin, append([]string{"webhook-config", "--config", configPath, "--cache-dir", "",
		"--url", "https://" + addr, "--ca-bundle", caFile}, flags...)...).Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		return w, unregister, fmt.Errorf("kubeplug webhook-config: %w\n%s", err, stderr)
	}
	w.Printed = string(out)
	api := c.AdmissionregistrationV1()
	for _, doc := range strings.Split(w.Printed, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return w, unregister, fmt.Errorf("webhook-config output: %w\n%s", err, out)
		}
		var name string
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			hooks := api.MutatingWebhookConfigurations()
			name, err = register(ctx, meta.Kind, doc, hooks.Create)
			w.Mutating = append(w.Mutating, name)
			undo = append(undo, func() { _ = hooks.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		case "ValidatingWebhookConfiguration":
			hooks := api.ValidatingWebhookConfigurations()
			name, err = register(ctx, meta.Kind, doc, hooks.Create)
			w.Validating = append(w.Validating, name)
			undo = append(undo, func() { _ = hooks.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		default:
			return w, unregister, fmt.Errorf("webhook-config printed a %q:\n%s", meta.Kind, out)
		}
		if err != nil {
			return w, unregister, err
		}
	}
	return w, unregister, nil
}

// register decodes doc, strictly, into a T (a webhook configuration of the
// given kind), creates it with create, and returns its name.
func register[T any, PT interface {
	*T
	GetName() string
}](ctx context.Context, kind, doc string,
	create func(context.Context, PT, metav1.CreateOptions) (PT, error),
) (string, error) {
	o := PT(new(T))
	if err := yaml.UnmarshalStrict([]byte(doc), o); err != nil {
		return "", fmt.Errorf("register %s: %w", kind, err)
	}
	if _, err := create(ctx, o, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("register %s: %w", kind, err)
	}
	return o.GetName(), nil
}
