package reclaim

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

// account is a ServiceAccount that holds only the RBAC `kubeplug rbac`
// derived for one host configuration.
type account struct {
	namespace, name string
	// config is the host configuration the rules were derived for.
	config string
}

// user is the account as the API server authenticates it.
func (a account) user() string {
	return "system:serviceaccount:" + a.namespace + ":" + a.name
}

// rbacAccount creates a ServiceAccount in a namespace of its own, runs
// `kubeplug rbac` on config with args, applies what it prints (bound to the
// account) and returns the account.
func rbacAccount(t *testing.T, name, config string, args ...string) account {
	t.Helper()
	ctx := context.Background()
	c := cp.Client()
	a := account{namespace: namespace(t), name: name, config: config}
	if _, err := c.CoreV1().ServiceAccounts(a.namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, err := testenv.Kubeplug()
	if err != nil {
		t.Fatal(err)
	}
	// The roles are named after the account's namespace, which is unique,
	// so that tests of this package do not share them.
	cmd := exec.Command(bin, append([]string{"rbac", "--config", cfg, "--cache-dir", "",
		"--service-account", a.namespace + "/" + a.name, "--name", "kubeplug-" + a.namespace}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubeplug rbac: %v\n%s", err, stderr.String())
	}
	t.Logf("kubeplug rbac %s:\n%s", strings.Join(args, " "), out)
	rules := filepath.Join(dir, "rbac.yaml")
	if err := os.WriteFile(rules, out, 0o644); err != nil {
		t.Fatal(err)
	}
	apply(t, rules)
	// kube-apiserver's RBAC authorizer reads roles and bindings from its
	// informers: a rule takes effect a moment after it is created. Every
	// derived set grants the host's informers their list of pods.
	testenv.Eventually(t, 30*time.Second, "the API server to apply kubeplug rbac's rules", func() (bool, error) {
		return a.can(t, "list", "", "pods", ""), nil
	})
	return a
}

// can asks the API server, through a SubjectAccessReview, whether a may do
// verb on resource of group in namespace ("" all).
func (a account) can(t *testing.T, verb, group, resource, namespace string) bool {
	t.Helper()
	r, err := cp.Client().AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   a.user(),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + a.namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: group, Resource: resource, Namespace: namespace,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

// startAs runs the host with a's configuration as a pod of a runs it: with
// the account's token and client-go's in-cluster configuration.
func (a account) startAs(t *testing.T, name string, args ...string) *testenv.Host {
	t.Helper()
	h := testenv.StartHost(t, testenv.HostOptions{Name: name, Config: a.config, Args: args, InCluster: inCluster(t, a.namespace, a.name)})
	h.WaitReady(t)
	return h
}

// inCluster is what a pod of the ServiceAccount namespace/name finds: a
// token of the account, the API server's address and CA, its namespace.
func inCluster(t *testing.T, namespace, name string) *testenv.InCluster {
	t.Helper()
	expiry := int64(3600)
	tok, err := cp.Client().CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	server, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	return &testenv.InCluster{
		Host: server.Hostname(), Port: server.Port(),
		Token: tok.Status.Token, CA: cp.ServingCA, Namespace: namespace,
	}
}

// noForbidden fails t if the API server forbade any request of h; why says
// what that would mean.
func noForbidden(t *testing.T, h *testenv.Host, why string) {
	t.Helper()
	m, err := h.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Sum("kubeplug_api_requests_total"); n == 0 {
		t.Fatal("the host counted no API requests: the check below would prove nothing")
	}
	if n := m.Sum("kubeplug_api_requests_total", "code", "403"); n != 0 {
		t.Errorf("the API server forbade %v of the host's requests: %s", n, why)
	}
	if strings.Contains(strings.ToLower(h.Log()), "forbidden") {
		t.Errorf("the host's log reports a forbidden request: %s\n%s", why, h.Log())
	}
}

// moduleEntry is the host.yaml entry of the guest in dir, named after it.
func moduleEntry(t *testing.T, dir, extra string) string {
	t.Helper()
	wasm, err := testenv.Guest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("- path: %s\n  name: %s\n%s%s", wasm, filepath.Base(dir), testenv.Allow[dir], extra)
}

// TestRBACForWarnRetainAlone: with only what `kubeplug rbac` derives for
// examples/warnretain, a module that only records events, the host's
// account can read no Secret and delete nothing anywhere, as the API
// server's own authorizer answers; and a host running as that account does
// its work (the Warning on a set whose claims are kept forever) without one
// forbidden request.
func TestRBACForWarnRetainAlone(t *testing.T) {
	ctx := context.Background()
	c := cp.Client()
	if err := testenv.InstallCRDs(ctx, cp.Config, testenv.ClaimUpdateCRD()); err != nil {
		t.Fatal(err)
	}
	a := rbacAccount(t, "warnretain", "modules:\n"+moduleEntry(t, "examples/warnretain", ""))
	other := namespace(t)

	// What it needs: a sanity check that the review below could say yes.
	for _, v := range []string{"list", "watch"} {
		if !a.can(t, v, "apps", "statefulsets", "") {
			t.Fatalf("the account may not %s statefulsets: the rules do not even cover the informers", v)
		}
	}
	if !a.can(t, "create", "", "events", other) {
		t.Fatal("the account may not create events: warnretain's Warning could not be recorded")
	}
	// What it must not do.
	for _, ns := range []string{"", a.namespace, other, "kube-system", "default"} {
		for _, v := range []string{"get", "list", "watch"} {
			if a.can(t, v, "", "secrets", ns) {
				t.Errorf("the account may %s secrets in namespace %q", v, ns)
			}
		}
		for _, r := range []struct{ group, resource string }{
			{"", "pods"}, {"", "persistentvolumeclaims"}, {"", "persistentvolumes"}, {"", "secrets"},
			{"", "configmaps"}, {"", "events"}, {"", "namespaces"}, {"", "serviceaccounts"},
			{"apps", "statefulsets"}, {"storage.k8s.io", "storageclasses"},
			{"coordination.k8s.io", "leases"}, {"kubeplug.dev", "volumeclaimupdates"},
		} {
			for _, v := range []string{"delete", "deletecollection", "patch", "update"} {
				if v != "patch" && v != "update" || r.resource != "events" {
					if a.can(t, v, r.group, r.resource, ns) {
						t.Errorf("the account may %s %s in namespace %q", v, r.resource, ns)
					}
				}
			}
		}
	}

	h := a.startAs(t, "warnretain-rbac")
	if _, err := setctl.Create(ctx, c, setctl.NewStatefulSet(other, "kept", "data", setctl.Policy{WhenDeleted: setctl.Retain, WhenScaled: setctl.Retain}, 1)); err != nil {
		t.Fatal(err)
	}
	awaitRetainedWarning(t, other, "kept")
	noForbidden(t, h, "kubeplug rbac left out a rule")
}

// TestRBACForRetentionAndReclaim: with only what `kubeplug rbac
// --leader-elect` derives for retention (limited to one namespace, so its
// writes go through a Role there) and reclaim with a CSI driver, a host
// running as that account takes the Lease, gives a condemned claim to its
// pod on scale-down, and reclaims a released volume through the driver with
// its provisioner Secret, without one forbidden request.
func TestRBACForRetentionAndReclaim(t *testing.T) {
	ctx := context.Background()
	c := cp.Client()
	if err := testenv.InstallCRDs(ctx, cp.Config, testenv.ClaimUpdateCRD()); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"user": "deleter"}
	d := serveDriver(t, func(mem *csitest.Driver) { mem.Secrets = secrets })
	apps := namespace(t)
	config := "modules:\n" +
		moduleEntry(t, "guests/retention", "  namespaces: ["+apps+"]\n") +
		moduleEntry(t, "guests/reclaim", "") +
		fmt.Sprintf("csiDrivers:\n- name: %s\n  endpoint: unix://%s\n  timeout: 10s\n", driverName, d.socket)
	a := rbacAccount(t, "retention-reclaim", config, "--leader-elect")
	testenv.Eventually(t, 30*time.Second, "the account to be allowed to patch claims in retention's namespace", func() (bool, error) {
		return a.can(t, "patch", "", "persistentvolumeclaims", apps), nil
	})
	if other := namespace(t); a.can(t, "patch", "", "persistentvolumeclaims", other) {
		t.Errorf("the account may patch claims in %s, outside retention's namespaces", other)
	}

	h := a.startAs(t, "retention-reclaim-rbac", "--leader-elect")
	awaitLease(t, a.namespace)

	// retention: scale-down gives the condemned pod its claim (Scale
	// waits for it before it deletes the pod).
	web, err := setctl.Create(ctx, c, setctl.NewStatefulSet(apps, "web", "data", setctl.Policy{WhenDeleted: setctl.Retain, WhenScaled: setctl.Delete}, 2))
	if err != nil {
		t.Fatal(err)
	}
	for ord := range int32(2) {
		if err := web.AwaitOwners(ctx, ord); err != nil {
			t.Fatal(err)
		}
	}
	if err := web.Scale(ctx, 1); err != nil {
		t.Fatal(err)
	}

	// reclaim: a volume released with a provisioner secret to read.
	p := releaseWithSecret(t, d, secrets)
	p.awaitNothingLeft(t, d)
	noForbidden(t, h, "kubeplug rbac left out a rule")
}

// awaitLease waits until a host holds the Lease ns/kubeplug.
func awaitLease(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, wait, "the host to hold the Lease "+ns+"/kubeplug", func() (bool, error) {
		l, err := cp.Client().CoordinationV1().Leases(ns).Get(ctx, "kubeplug", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
	})
}

// releaseWithSecret provisions a volume of secretClass, creates the
// provisioner Secret its class names with data secrets, expects one
// DeleteVolume with them, waits for the module's finalizer and deletes the
// claim: the volume is released, for the host to reclaim.
func releaseWithSecret(t *testing.T, d *csiDriver, secrets map[string]string) pair {
	t.Helper()
	p := provision(t, d, secretClass)
	d.expectDeletes(p.handle, secrets).Times(1)
	if _, err := cp.Client().CoreV1().Secrets(p.ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.pv + "-deleter"}, StringData: secrets,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.awaitFinalizer(t)
	p.deleteClaim(t)
	return p
}

// awaitRetainedWarning waits for warnretain's Warning on the set ns/name.
func awaitRetainedWarning(t *testing.T, ns, name string) {
	t.Helper()
	testenv.Eventually(t, wait, "warnretain's Warning on "+ns+"/"+name, func() (bool, error) {
		evs, err := cp.Client().CoreV1().Events(ns).List(context.Background(),
			metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=ClaimsRetainedForever"})
		return err == nil && len(evs.Items) > 0, err
	})
}
