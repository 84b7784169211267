package admission

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// services is where the API server finds a Service when it calls a webhook
// registered by service (controlplane.Options.ServiceResolver): a test
// sets the address its host's webhook listens on.
var services sync.Map // "namespace/name" -> "127.0.0.1:port"

func resolveService(namespace, name string, _ int32) (*url.URL, error) {
	addr, ok := services.Load(namespace + "/" + name)
	if !ok {
		return nil, fmt.Errorf("service %s/%s: no test serves it", namespace, name)
	}
	return &url.URL{Scheme: "https", Host: addr.(string)}, nil
}

// TestSelfManagedCertificate: the host makes its webhook's CA and serving
// certificate itself (--webhook-cert-secret), for the Service the webhook
// configuration names, and patches the caBundle of the configuration that
// kubeplug webhook-config --self-managed printed without one; the API
// server then calls the webhook over TLS, verifying the certificate for
// the Service's name. With lifetimes short enough to see a whole CA
// rotation (a new CA trusted, then signing, then the old one dropped), every
// admission request on the way is answered by the module, never by a TLS
// failure.
func TestSelfManagedCertificate(t *testing.T) {
	ctx := context.Background()
	c := cp.Client()
	strict := strictNamespace(t, c)
	home := testenv.Namespace(t, c) // the host's: its Secret and Service
	const service, secret, name = "kubeplug-webhook", "kubeplug-webhook-cert", "kubeplug-selfcert"
	addr := testenv.FreeAddr(t)
	services.Store(home+"/"+service, addr)
	t.Cleanup(func() { services.Delete(home + "/" + service) })

	wasm, err := testenv.Guest("examples/storagepolicy")
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`modules:
- name: storagepolicy
  path: %s
  namespaces: [%s]
  allow: [{action: mutate, resources: [persistentvolumeclaims], paths: [/metadata/labels]}, {action: admit, resources: [statefulsets]}]
  admission: {failurePolicy: Fail, timeout: 5s}
`, wasm, strict)
	// The CA renews at 40s, the serving certificate at 2/3 of 30s; each
	// step of a CA rotation waits 8s for the API server and the replica.
	h := testenv.StartHost(t, testenv.HostOptions{
		Kubeconfig: cp.Kubeconfig, Config: config,
		Args: []string{"--webhook-addr", addr,
			"--webhook-cert-secret", home + "/" + secret, "--webhook-service", home + "/" + service, "--webhook-config-name", name,
			"--webhook-ca-lifetime", "60s", "--webhook-cert-lifetime", "30s", "--webhook-cert-propagation", "8s"},
	})
	h.WaitReady(t)

	// Register the webhook as an operator would: webhook-config for the
	// Service, with no caBundle, the host to fill it in.
	bin, err := testenv.Kubeplug()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "webhook-config", "--config", h.ConfigPath, "--cache-dir", "",
		"--service", home+"/"+service, "--self-managed", "--name", name)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubeplug webhook-config: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("webhook-config --self-managed warned: %s", stderr.String())
	}
	var mc admissionregistrationv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(out, &mc); err != nil {
		t.Fatalf("webhook-config printed more or other than one MutatingWebhookConfiguration: %v\n%s", err, out)
	}
	if len(mc.Webhooks) != 1 || len(mc.Webhooks[0].ClientConfig.CABundle) != 0 {
		t.Fatalf("want one webhook, without a caBundle:\n%s", out)
	}
	hooks := c.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := hooks.Create(ctx, &mc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hooks.Delete(context.Background(), name, metav1.DeleteOptions{}) })

	// admitted makes a request the module must deny; it reports whether
	// the module answered it, and the error otherwise.
	admitted := func() (bool, error) {
		_, err := c.AppsV1().StatefulSets(strict).Create(ctx, set("web", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "would keep its PersistentVolumeClaims forever") {
			return true, nil
		}
		return false, err
	}
	testenv.Eventually(t, wait, "the API server to call the webhook with the caBundle the host patched", func() (bool, error) {
		ok, _ := admitted()
		return ok, nil
	})
	first, err := c.CoreV1().Secrets(home).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(first.Data["ca.crt"], []byte("BEGIN CERTIFICATE")); n != 1 {
		t.Fatalf("the Secret's ca.crt holds %d certificates, want the one CA", n)
	}

	// Through a whole CA rotation: two CAs in the bundle, then the new one
	// alone. Every request on the way must reach the module.
	var sawTwo bool
	requests := 0
	testenv.Eventually(t, 3*time.Minute, "a CA rotation to finish (the old CA dropped from ca.crt)", func() (bool, error) {
		requests++
		if ok, err := admitted(); !ok {
			return false, fmt.Errorf("request %d during the rotation was not answered by the module: %v", requests, err)
		}
		s, err := c.CoreV1().Secrets(home).Get(ctx, secret, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cas := bytes.Count(s.Data["ca.crt"], []byte("BEGIN CERTIFICATE"))
		sawTwo = sawTwo || cas == 2
		mc, err := hooks.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		patched := bytes.Equal(mc.Webhooks[0].ClientConfig.CABundle, s.Data["ca.crt"])
		return sawTwo && cas == 1 && patched && !bytes.Equal(s.Data["ca.crt"], first.Data["ca.crt"]), nil
	})
	if requests < 2 {
		t.Fatalf("only %d request(s) during the rotation: the check proves nothing", requests)
	}
	if ok, err := admitted(); !ok {
		t.Fatalf("after the rotation: %v", err)
	}
	if strings.Contains(h.Log(), "level=WARN msg=\"webhook certificate") {
		t.Errorf("the host warned about its certificate:\n%s", h.Log())
	}
}
