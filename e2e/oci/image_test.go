package oci

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

const (
	protectFinalizer = "e2e.kubeplug.dev/protect"
	user, password   = "kubeplug", "e2e-secret"
	protectAllow     = "  allow: [{action: addFinalizer, resources: [persistentvolumeclaims]}]\n"
)

// TestImageModule: the host runs a module it pulls from a registry that
// asks for credentials, after checking its signature, and refuses to start
// on an image that is not signed by the required key.
func TestImageModule(t *testing.T) {
	host := serveRegistry(t)
	dir := t.TempDir()
	signKey, pubKey := keyPair(t, dir, "cosign")
	_, otherPub := keyPair(t, dir, "other")
	// The credentials as a Kubernetes image pull secret, as an operator
	// would mount one.
	secret := filepath.Join(dir, "pull-secret.yaml")
	auths := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
	write(t, secret, "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: "+
		base64.StdEncoding.EncodeToString([]byte(auths))+"\n")

	wasm, err := testenv.Guest("e2e/guests/protect")
	if err != nil {
		t.Fatal(err)
	}
	// Another module for the unsigned tag: pushed twice in one second, one
	// module makes one manifest, whose digest the signature then covers.
	other, err := testenv.Guest("examples/warnretain")
	if err != nil {
		t.Fatal(err)
	}
	signed, unsigned := host+"/policies/protect:1.0.0", host+"/policies/protect:unsigned"
	kubeplug(t, "push", "--plain-http", "--docker-config", secret, "--sign-key", signKey, wasm, signed)
	kubeplug(t, "push", "--plain-http", "--docker-config", secret, other, unsigned)
	b, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)

	entry := func(ref, key string) string {
		return fmt.Sprintf("modules:\n- image: %s\n  name: protect\n  plainHTTP: true\n  dockerConfig: %s\n  signature: {publicKey: %s}\n%s",
			ref, secret, key, protectAllow)
	}

	t.Run("signed image runs", func(t *testing.T) {
		ns := testenv.Namespace(t, cp.Client())
		h := testenv.StartHost(t, testenv.HostOptions{
			Kubeconfig: cp.Kubeconfig,
			Config:     entry(signed, pubKey) + "  namespaces: [" + ns + "]\n",
			Args:       []string{"--image-cache-dir", t.TempDir()},
		})
		h.WaitReady(t)
		createSet(t, ns, "web", 2)
		testenv.Eventually(t, testenv.Timeout, "the image's module protects both claims", func() (bool, error) {
			return protected(t, ns) == 2, nil
		})
		m, err := h.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		if !m.Has("kubeplug_module_info", "module", "protect", "sha256", hex.EncodeToString(sum[:])) {
			t.Errorf("kubeplug_module_info has no series for protect with the pushed module's sha256 %x", sum)
		}
		if !strings.Contains(h.Log(), "source="+host+"/policies/protect@sha256:") {
			t.Errorf("the host's log does not name the pulled image by its digest")
		}
		removeFinalizers(t, ns)
	})

	t.Run("a moved tag is swapped in", func(t *testing.T) {
		// The tag moves to another signed module (swapver, which needs no
		// capability): the host pulls it, checks its signature and swaps
		// it in as generation 2 without a restart.
		next, err := testenv.Guest("e2e/guests/swapver")
		if err != nil {
			t.Fatal(err)
		}
		nb, err := os.ReadFile(next)
		if err != nil {
			t.Fatal(err)
		}
		nextSum := sha256.Sum256(nb)
		moving := host + "/policies/protect:stable"
		kubeplug(t, "push", "--plain-http", "--docker-config", secret, "--sign-key", signKey, wasm, moving)
		h := testenv.StartHost(t, testenv.HostOptions{
			Kubeconfig: cp.Kubeconfig,
			Config: fmt.Sprintf("modules:\n- image: %s\n  name: protect\n  plainHTTP: true\n  dockerConfig: %s\n  signature: {publicKey: %s}\n  resolveEvery: 200ms\n%s",
				moving, secret, pubKey, protectAllow),
			Args: []string{"--image-cache-dir", t.TempDir()},
		})
		h.WaitReady(t)
		if strings.Contains(h.Log(), "tag moved") {
			t.Fatalf("a tag that has not moved was reported:\n%s", h.Log())
		}
		kubeplug(t, "push", "--plain-http", "--docker-config", secret, "--sign-key", signKey, next, moving)
		testenv.Eventually(t, testenv.Timeout, "the host to swap in the module the tag moved to", func() (bool, error) {
			m, err := h.Scrape()
			if err != nil {
				return false, nil
			}
			return m.Has("kubeplug_module_info", "module", "protect", "sha256", hex.EncodeToString(nextSum[:]), "generation", "2"), nil
		})
		if !strings.Contains(h.Log(), `msg="module's tag moved" module=protect image=`+moving) {
			t.Errorf("the host's log does not say that the tag moved")
		}
	})

	for _, tc := range []struct{ name, ref, key, want string }{
		{"unsigned image refused", unsigned, pubKey, "module not signed"},
		{"image signed by another key refused", signed, otherPub, "signature does not verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := testenv.StartHost(t, testenv.HostOptions{
				Kubeconfig: cp.Kubeconfig,
				Config:     entry(tc.ref, tc.key),
				Args:       []string{"--image-cache-dir", t.TempDir()},
			})
			select {
			case <-h.Done():
			case <-time.After(testenv.Timeout):
				t.Fatalf("the host did not refuse the image; log:\n%s", h.Log())
			}
			if code := h.ExitCode(); code != 2 {
				t.Errorf("exit code %d, want 2 (bad configuration or module)", code)
			}
			if !strings.Contains(h.Log(), tc.want) || !strings.Contains(h.Log(), "host.yaml:2 (modules[0])") {
				t.Errorf("the host's log does not say %q at host.yaml:2:\n%s", tc.want, h.Log())
			}
			_ = h.Stop(syscall.SIGTERM, time.Second)
		})
	}
}

// serveRegistry serves go-containerregistry's in-memory registry on
// loopback, behind HTTP basic auth, and returns its host:port.
func serveRegistry(t *testing.T) string {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="e2e"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// kubeplug runs the kubeplug binary with args and fails t if it fails.
func kubeplug(t *testing.T, args ...string) {
	t.Helper()
	bin, err := testenv.Kubeplug()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, append([]string{"--image-cache-dir", ""}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubeplug %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// keyPair writes a P-256 key pair, as the private key PEM kubeplug signs
// with and the public key PEM a host.yaml names.
func keyPair(t *testing.T, dir, name string) (private, public string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	private, public = filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	write(t, private, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})))
	write(t, public, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))
	return private, public
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// createSet creates a StatefulSet with the claim template "data" and its
// claims data-<name>-<i>, as the StatefulSet controller would (none runs).
func createSet(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	c := cp.Client()
	labels := map[string]string{"app": name}
	claim := func(n string) corev1.PersistentVolumeClaim {
		return corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
	}
	set := statefulSet(ns, name, labels, replicas, claim("data"))
	if _, err := c.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range replicas {
		pvc := claim(fmt.Sprintf("data-%s-%d", name, i))
		if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// protected counts the claims of ns that carry the protect finalizer.
func protected(t *testing.T, ns string) int {
	t.Helper()
	list, err := cp.Client().CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range list.Items {
		if slices.Contains(c.Finalizers, protectFinalizer) {
			n++
		}
	}
	return n
}

// removeFinalizers lets the namespace's deletion finish after the test.
func removeFinalizers(t *testing.T, ns string) {
	ctx := context.Background()
	list, err := cp.Client().CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, c := range list.Items {
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == protectFinalizer })
		_, _ = cp.Client().CoreV1().PersistentVolumeClaims(ns).Update(ctx, &c, metav1.UpdateOptions{})
	}
}
