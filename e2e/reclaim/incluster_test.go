package reclaim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

// The service account deploy/base creates and binds.
const (
	saNamespace = "kubeplug-system"
	saName      = "kubeplug"
)

// TestInClusterWithDeployRBAC runs the host as deploy/ runs it in a
// cluster, with retention, reclaim and warnretain enforcing, as an operator
// whose kube-controller-manager does not do retention's and reclaim's work
// would run them: as the service account kubeplug-system/kubeplug of
// deploy/base, with nothing but what `kubeplug rbac --leader-elect` prints
// for that host.yaml (README.md says to apply it when enforcing) on an API
// server that authorizes with RBAC, through client-go's in-cluster
// configuration (no kubeconfig), with leader election on. Each write the
// modules make is of a kind the others are not: a Lease, owner references
// on claims, a Warning event, a finalizer on a volume, a provisioner Secret
// read, a backing volume deleted and then its object. Every one of them must
// happen, and the API server must forbid none of the host's requests.
func TestInClusterWithDeployRBAC(t *testing.T) {
	ctx := context.Background()
	c := cp.Client()
	for _, f := range []string{"namespace.yaml", "serviceaccount.yaml"} {
		apply(t, filepath.Join(testenv.Root(), "deploy", "base", f))
	}
	// With the VolumeClaimUpdate CRD served the host watches
	// volumeclaimupdates too: the rules must cover that informer.
	if err := testenv.InstallCRDs(ctx, cp.Config, testenv.ClaimUpdateCRD()); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"user": "deleter"}
	d := serveDriver(t, func(mem *csitest.Driver) { mem.Secrets = secrets })
	var modules strings.Builder
	for _, dir := range []string{"guests/retention", "guests/reclaim", "examples/warnretain"} {
		wasm, err := testenv.Guest(dir)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&modules, "- path: %s\n  name: %s\n%s", wasm, filepath.Base(dir), testenv.Allow[dir])
	}
	config := fmt.Sprintf("modules:\n%scsiDrivers:\n- name: %s\n  endpoint: unix://%s\n  timeout: 10s\n",
		modules.String(), driverName, d.socket)
	apply(t, generatedRBAC(t, config, "--leader-elect"))
	h := testenv.StartHost(t, testenv.HostOptions{
		Name:      "in-cluster",
		Config:    config,
		Args:      []string{"--leader-elect"},
		InCluster: inCluster(t, saNamespace, saName),
	})
	h.WaitReady(t)
	awaitLease(t, saNamespace)

	// retention: a set whose claims go with it; warnretain: a set whose
	// claims are kept forever.
	ns := namespace(t)
	web, err := setctl.Create(ctx, c, setctl.NewStatefulSet(ns, "web", "data", setctl.Policy{WhenDeleted: setctl.Delete, WhenScaled: setctl.Delete}, 2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := setctl.Create(ctx, c, setctl.NewStatefulSet(ns, "kept", "data", setctl.Policy{WhenDeleted: setctl.Retain, WhenScaled: setctl.Retain}, 1)); err != nil {
		t.Fatal(err)
	}

	// reclaim: a volume released with a provisioner secret to read.
	p := releaseWithSecret(t, d, secrets)

	for ord := range int32(2) {
		if err := web.AwaitOwners(ctx, ord); err != nil {
			t.Fatal(err)
		}
	}
	awaitRetainedWarning(t, ns, "kept")
	p.awaitNothingLeft(t, d)
	noForbidden(t, h, "kubeplug rbac's rules lack one")
}

// generatedRBAC writes what `kubeplug rbac --config` prints for the host
// configuration config, run with args, to a file and returns its path.
func generatedRBAC(t *testing.T, config string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	hostYAML := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(hostYAML, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := testenv.KubeplugOutput(append([]string{"rbac", "--config", hostYAML, "--cache-dir", ""}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	rbac := filepath.Join(dir, "rbac.yaml")
	if err := os.WriteFile(rbac, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return rbac
}

// apply creates the objects of the YAML manifest file path, whatever their
// kinds, and deletes them when t ends.
func apply(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cp.Config)))
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		var obj unstructured.Unstructured
		if err == nil {
			err = yaml.Unmarshal(doc, &obj.Object)
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", path, i, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s: document %d: %v", path, i, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
		}
		if _, err := ri.Create(ctx, &obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: document %d: %v", path, i, err)
		}
		t.Cleanup(func() { _ = ri.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}) })
	}
}
