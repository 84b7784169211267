package install

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
	"github.com/kubeplug/kubeplug/e2e/internal/manifests"
	"github.com/kubeplug/kubeplug/e2e/internal/podrun"
	"github.com/kubeplug/kubeplug/e2e/internal/portlease"
	"github.com/kubeplug/kubeplug/e2e/internal/setctl"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// wait bounds each wait on a hung test; it is not a performance assertion.
const wait = 3 * time.Minute

// The image name the chart's values give the pod; the kustomize base's is
// its images: entry, the version.
const (
	chartImage = "kubeplug:e2e"
	// csiDriver is configured in the chart's hostConfig: reclaim puts
	// external-provisioner's finalizer on the volumes of drivers the host
	// knows (the socket is only dialled to delete a volume).
	csiDriver            = "csi.install.e2e.kubeplug.dev"
	provisionerFinalizer = "external-provisioner.volume.kubernetes.io/finalizer"
)

// TestHelmInstall installs the chart with its default modules (retention
// and reclaim, in shadow mode) and storagepolicy, whose admit hook the
// chart registers as a webhook with the host's own certificate
// (webhook.certificate.mode self), a CSI driver in hostConfig and one
// replica, into a namespace that enforces Pod Security restricted, then
// uninstalls it.
func TestHelmInstall(t *testing.T) {
	ns := restrictedNamespace(t, "kubeplug-helm")
	metrics, probes, webhookPort := freePort(t), freePort(t), freePort(t)
	const release, service = "kp-kubeplug", "kp-kubeplug-webhook"
	services.Store(ns+"/"+service, fmt.Sprintf("127.0.0.1:%d", webhookPort))
	t.Cleanup(func() { services.Delete(ns + "/" + service) })
	hostConfig := map[string]any{"csiDrivers": []any{map[string]any{"name": csiDriver, "endpoint": "unix:///var/run/csi/csi.sock"}}}
	modules := append(chartModules(t), storagePolicy)
	rbac := []string{"--name", release, "--service-account", ns + "/" + release, "--leader-elect", "--leader-elect-name", release,
		"--webhook-cert-secret", ns + "/kp-kubeplug-webhook-tls", "--webhook-config-name", release}
	_, objs, err := manifests.Helm(manifests.Release{Name: "kp", Namespace: ns, Values: map[string]any{
		"image":        map[string]any{"repository": "kubeplug", "tag": "e2e"},
		"replicaCount": 1,
		"metrics":      map[string]any{"port": metrics},
		"probes":       map[string]any{"port": probes},
		"hostConfig":   hostConfig,
		"modules":      modules,
		"webhook": map[string]any{"enabled": true, "port": webhookPort,
			"mutating": webhookValues(t, storagePolicy, ns+"/"+service, release, ns)},
		// storagepolicy's admission reads namespaces and StatefulSets,
		// which the default modules in shadow mode never needed: the
		// values kubeplug rbac -o helm prints for these modules, as the
		// chart's values.yaml says.
		"rbac": rbacValues(t, merged(hostConfig, map[string]any{"modules": modules}), rbac),
	}})
	if err != nil {
		t.Fatal(err)
	}
	exercise(t, installed{objs: objs, namespace: ns, deployment: release, configMap: "kp-kubeplug-config", image: chartImage, lease: release,
		rbac: rbac, metrics: metrics, probes: probes, csi: true, helm: true,
		webhook: &webhook{configuration: release, secret: "kp-kubeplug-webhook-tls"}})
}

// TestKustomizeInstall installs deploy/crds and then deploy/ (the base) as
// kubectl apply -k would, with the two changes the test machine needs: one
// replica, and the ports moved to free ones, since the pods share the
// machine's network; then deletes deploy/ as kubectl delete -k would.
func TestKustomizeInstall(t *testing.T) {
	_, crds, err := manifests.Kustomize("deploy/crds")
	if err != nil {
		t.Fatal(err)
	}
	apply(t, crds)
	_, objs, err := manifests.Kustomize("deploy")
	if err != nil {
		t.Fatal(err)
	}
	metrics, probes := freePort(t), freePort(t)
	u := manifests.Find(objs, "Deployment", "kubeplug")
	d := toDeployment(t, u)
	one := int32(1)
	d.Spec.Replicas = &one
	c := &d.Spec.Template.Spec.Containers[0]
	for i, a := range c.Args {
		c.Args[i] = strings.NewReplacer(
			"--metrics-bind-address=:8080", fmt.Sprintf("--metrics-bind-address=:%d", metrics),
			"--health-probe-bind-address=:8081", fmt.Sprintf("--health-probe-bind-address=:%d", probes),
		).Replace(a)
	}
	for i := range c.Ports {
		switch c.Ports[i].Name {
		case "metrics":
			c.Ports[i].ContainerPort = int32(metrics)
		case "probes":
			c.Ports[i].ContainerPort = int32(probes)
		}
	}
	u.Object, err = runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		t.Fatal(err)
	}
	exercise(t, installed{objs: objs, namespace: "kubeplug-system", deployment: "kubeplug", configMap: "kubeplug-config", image: c.Image, lease: "kubeplug",
		rbac: []string{"--leader-elect"}, metrics: metrics, probes: probes})
}

// installed is one install to exercise.
type installed struct {
	objs                  []*unstructured.Unstructured
	namespace             string
	deployment, configMap string
	// image is the image name the Deployment's pod runs.
	image string
	// lease is the host's leader Lease, in namespace.
	lease string
	// rbac are the flags of kubeplug rbac that name the install's roles,
	// account and Lease as it does.
	rbac            []string
	metrics, probes int
	// csi: reclaim knows csiDriver, so it would write a finalizer: in
	// shadow mode it disagrees with the cluster, where no
	// external-provisioner protects that driver's volumes.
	csi bool
	// helm: installed by helm install, so that helm uninstall leaves the
	// CRDs of the chart's crds/.
	helm bool
	// webhook, when set: storagepolicy's admit hook is registered for the
	// namespaces labelled webhookLabel=namespace.
	webhook *webhook
}

// webhook is what an install with the webhook in self-managed
// certificate mode names: the webhook configuration whose caBundle the
// host patches, and the Secret it keeps its CA and certificate in.
type webhook struct {
	configuration, secret string
}

// exercise applies the objects, runs the Deployment's pod and shows the
// host working with exactly the installed rights: probes pass, retention
// agrees with kube-controller-manager over a scale-down and a deletion and
// fights it nowhere, reclaim reconciles (and disagrees, reported, where the
// cluster does not protect a volume as it would), a host.yaml change
// reaches the running process, and the API server forbids nothing it asks.
// Then the uninstall keeps the CRD and the users' VolumeClaimUpdates, and
// removes the Lease and Secret the host made.
func exercise(t *testing.T, in installed) {
	ctx := t.Context()
	c := cp.Client()
	apply(t, in.objs)

	server, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	img := image(t)
	rt := podrun.New(podrun.Options{
		Images: map[string]v1.Image{in.image: img},
		Client: c, Host: server.Hostname(), Port: server.Port(), CA: cp.ServingCA,
		Dir: t.TempDir(),
	})
	kl, err := kubelet.Start(ctx, c, "node-"+in.namespace)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.StopAll(); kl.Stop() })
	kl.ServeWith(in.namespace, rt)

	// The Deployment controller makes a ReplicaSet, which makes the pod;
	// the restricted profile admits it; podrun runs it and reports it
	// ready once its readiness probe passes.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		pods, err := c.CoreV1().Pods(in.namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Logf("list the pods of %s: %v", in.namespace, err)
			return
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			t.Logf("pod %s: %s %+v\nits log:\n%s", p.Name, p.Status.Phase, p.Status.ContainerStatuses, rt.Log(p))
		}
	})
	pod := awaitReadyPod(t, in)
	probeAddr := fmt.Sprintf("127.0.0.1:%d", in.probes)
	for _, path := range []string{"/healthz", "/readyz"} {
		code, body, err := testenv.Get(probeAddr, path)
		if err != nil || code != 200 {
			t.Fatalf("GET %s on the probe port: %d %q %v", path, code, body, err)
		}
	}
	before, _ := rt.Status(pod)

	work := testenv.Namespace(t, c)
	if in.webhook != nil {
		labelNamespace(t, work, map[string]string{webhookLabel: in.namespace})
		admits(t, in)
	}

	// retention, in shadow mode beside kube-controller-manager's KEP-1847
	// code: a set scaled down and deleted.
	kl.Serve(work)
	log := func() string { return rt.Log(pod) }
	if in.webhook != nil {
		// storagepolicy labels the claims kube-controller-manager makes.
		createSet(t, setctl.NewStatefulSet(work, "labelled", "data", setctl.Policy{}, 1))
		mutates(t, work, "labelled")
	}
	besideKCM(t, in, work, log)

	// reclaim: a bound CSI volume with reclaim policy Delete.
	pv := boundVolume(t, work)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", in.metrics)
	reclaim := moduleSeries(t, in, "reclaim")
	testenv.Eventually(t, wait, "reclaim to reconcile "+pv, func() (bool, error) {
		return reclaim("kubeplug_reconciles_total") > 0 && reclaim("kubeplug_shadow_differing_subjects")+reclaim("kubeplug_shadow_agreements_total") > 0, nil
	})
	if in.csi {
		// Nothing in this cluster protects csiDriver's volumes as reclaim
		// would (no external-provisioner runs for it): a disagreement,
		// once the settle time has passed, naming the volume; and no
		// finalizer, since shadow mode writes nothing.
		testenv.Eventually(t, wait, "reclaim's disagreement on "+pv, func() (bool, error) {
			return reclaim("kubeplug_shadow_disagreements_total", "compare_with", "cluster") == 1, nil
		})
		l := log()
		if !strings.Contains(l, "shadow disagrees with the cluster") || !strings.Contains(l, pv) || !strings.Contains(l, provisionerFinalizer) {
			t.Errorf("no log line says that reclaim would add %s to %s:\n%s", provisionerFinalizer, pv, l)
		}
		v, err := c.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Finalizers) > 0 && slices.Contains(v.Finalizers, provisionerFinalizer) {
			t.Errorf("%s has %s: reclaim in shadow mode wrote it", pv, provisionerFinalizer)
		}
	} else {
		testenv.Eventually(t, wait, "reclaim to agree with the cluster on "+pv, func() (bool, error) {
			return reclaim("kubeplug_shadow_agreements_total", "compare_with", "cluster") > 0, nil
		})
		if n := reclaim("kubeplug_shadow_disagreements_total"); n != 0 {
			t.Errorf("reclaim disagreed %v times with the cluster on a volume of a driver the host does not know:\n%s", n, log())
		}
	}

	// A host.yaml change: warnretain added in the ConfigMap reaches the
	// running process through the kubelet's ..data swap, and it warns
	// about a set whose claims are kept forever; the process is the same.
	cm, err := c.CoreV1().ConfigMaps(in.namespace).Get(ctx, in.configMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["host.yaml"] = addWarnRetain(t, cm.Data["host.yaml"])
	// warnretain enforcing records events where sets are, which the
	// default modules in shadow mode never needed: the rules kubeplug rbac
	// prints for the new host.yaml come first, as README.md says.
	grant(t, in, cm.Data["host.yaml"])
	if _, err := c.CoreV1().ConfigMaps(in.namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	createSet(t, setctl.NewStatefulSet(work, "kept", "data", setctl.Policy{WhenDeleted: setctl.Retain, WhenScaled: setctl.Retain}, 1))
	testenv.Eventually(t, wait, "warnretain's Warning on "+work+"/kept", func() (bool, error) {
		evs, err := c.CoreV1().Events(work).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=kept,reason=ClaimsRetainedForever"})
		return err == nil && len(evs.Items) > 0, err
	})
	after, _ := rt.Status(pod)
	if after.PID != before.PID || after.Restarts != 0 {
		t.Errorf("the host.yaml change restarted the container: pid %d -> %d, %d restarts", before.PID, after.PID, after.Restarts)
	}
	got, err := c.CoreV1().Pods(in.namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Status.ContainerStatuses[0].RestartCount; n != 0 {
		t.Errorf("pod %s restarted %d times", pod.Name, n)
	}

	// Exactly the installed rights: the API server forbade nothing.
	m, err := testenv.Scrape(metricsAddr)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Sum("kubeplug_api_requests_total"); n == 0 {
		t.Fatal("the host counted no API requests: the checks below would prove nothing")
	}
	if n := m.Sum("kubeplug_api_requests_total", "code", "403"); n != 0 {
		t.Errorf("the API server forbade %v of the host's requests: the installed RBAC lacks a rule", n)
	}
	if l := log(); strings.Contains(strings.ToLower(l), "forbidden") {
		t.Errorf("the host's log reports a forbidden request: the installed RBAC lacks a rule\n%s", l)
	}

	ownedByTheInstall(t, in)
	uninstall(t, in, work)
}

// restrictedNamespace creates a namespace that enforces Pod Security's
// restricted profile, and checks that it does: a privileged pod is refused.
func restrictedNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ctx := t.Context()
	c := cp.Client()
	ns, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: prefix + "-",
		Labels:       map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireEnforced(t, ns.Name)
	return ns.Name
}

// requireEnforced shows that the API server enforces the restricted
// profile in ns: a pod that runs as root is refused.
func requireEnforced(t *testing.T, ns string) {
	t.Helper()
	_, err := cp.Client().CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "root"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted`) {
		t.Fatalf("namespace %s: a pod breaking the restricted profile was not refused: %v", ns, err)
	}
}

// awaitReadyPod waits for the Deployment's pod to be Running and Ready.
func awaitReadyPod(t *testing.T, in installed) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	c := cp.Client()
	d := deploymentOf(t, in)
	requireEnforced(t, in.namespace)
	sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels).String()
	var pod *corev1.Pod
	testenv.Eventually(t, wait, "the pod of Deployment "+in.namespace+"/"+in.deployment+" to be ready", func() (bool, error) {
		pods, err := c.CoreV1().Pods(in.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; kubelet.RunningAndReady(p) {
				pod = p
				return true, nil
			}
		}
		return false, nil
	})
	return pod
}

// boundVolume creates a claim and a CSI volume of csiDriver bound to it,
// reclaim policy Delete, and returns the volume's name.
func boundVolume(t *testing.T, ns string) string {
	t.Helper()
	ctx := t.Context()
	c := cp.Client()
	size := resource.MustParse("1Gi")
	empty := ""
	claim, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &empty,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := c.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "install-", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": csiDriver}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: claim.Name, UID: claim.UID},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: csiDriver, VolumeHandle: string(claim.UID)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		v, err := c.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if err == nil && len(v.Finalizers) > 0 {
			v.Finalizers = nil
			_, _ = c.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{})
		}
		_ = c.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	})
	testenv.Eventually(t, wait, "the binder to bind "+pv.Name, func() (bool, error) {
		cl, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim.Name, metav1.GetOptions{})
		return err == nil && cl.Status.Phase == corev1.ClaimBound, err
	})
	return pv.Name
}

// grant applies what kubeplug rbac prints for hostYAML, with the install's
// names: its roles' rules become those.
func grant(t *testing.T, in installed, hostYAML string) {
	t.Helper()
	objs, err := manifests.Decode(string(kubeplugRBAC(t, hostYAML, in.rbac)))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, objs)
}

// rbacValues is the chart's rbac value for host.yaml's content, as
// kubeplug rbac -o helm prints it with args.
func rbacValues(t *testing.T, hostYAML map[string]any, args []string) map[string]any {
	t.Helper()
	b, err := yaml.Marshal(hostYAML)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		RBAC map[string]any `json:"rbac"`
	}
	if err := yaml.Unmarshal(kubeplugRBAC(t, string(b), append([]string{"-o", "helm"}, args...)), &v); err != nil {
		t.Fatal(err)
	}
	return v.RBAC
}

// kubeplugRBAC is what kubeplug rbac prints for hostYAML with args, the
// image's modules read from the build.
func kubeplugRBAC(t *testing.T, hostYAML string, args []string) []byte {
	t.Helper()
	config := filepath.Join(t.TempDir(), "host.yaml")
	if err := os.WriteFile(config, []byte(hostYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := testenv.KubeplugOutput(append([]string{"rbac", "--config", config, "--modules-dir", modulesDir(t), "--cache-dir", ""}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// merged returns a's entries and b's, b's winning.
func merged(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// addWarnRetain appends the warnretain example module, as the image has
// it, to a host.yaml.
func addWarnRetain(t *testing.T, hostYAML string) string {
	t.Helper()
	var file map[string]any
	if err := yaml.Unmarshal([]byte(hostYAML), &file); err != nil {
		t.Fatalf("host.yaml: %v", err)
	}
	mods, _ := file["modules"].([]any)
	file["modules"] = append(mods, map[string]any{
		"path":  "/modules/warnretain.wasm",
		"allow": []any{map[string]any{"action": "event", "resources": []any{"statefulsets"}}},
	})
	out, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// apply applies objs with server-side apply, CRDs and namespaces first,
// as kubectl apply does, and deletes what it created when t ends (the CRD
// stays: both installs share it).
func apply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := t.Context()
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cp.Config)))
	first := func(o *unstructured.Unstructured) int {
		switch o.GetKind() {
		case "CustomResourceDefinition":
			return 0
		case "Namespace":
			return 1
		}
		return 2
	}
	for pass := range 3 {
		for _, o := range objs {
			if first(o) != pass {
				continue
			}
			gvk := o.GroupVersionKind()
			var m *meta.RESTMapping
			testenv.Eventually(t, wait, "the API server to serve "+gvk.String(), func() (bool, error) {
				var err error
				if m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
					mapper.Reset()
					return false, nil
				}
				return true, nil
			})
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
			}
			if _, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "e2e-install", Force: true}); err != nil {
				t.Fatalf("apply %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
			if o.GetKind() == "CustomResourceDefinition" {
				mapper.Reset()
				continue
			}
			t.Cleanup(func() {
				bg := metav1.DeletePropagationBackground
				_ = ri.Delete(context.Background(), o.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg})
			})
		}
	}
}

var (
	imageOnce sync.Once
	imageErr  error
	theImage  v1.Image
)

// image is the image `make image` built (KUBEPLUG_IMAGE, an OCI layout
// directory), or, without it, one testenv builds as make image does.
func image(t *testing.T) v1.Image {
	t.Helper()
	imageOnce.Do(func() {
		dir, err := testenv.ImageLayout()
		if err != nil {
			imageErr = err
			return
		}
		imgs, err := podrun.ReadLayout(dir)
		if err != nil {
			imageErr = err
			return
		}
		if len(imgs) != 1 {
			imageErr = fmt.Errorf("%s: %d images, want the one make image writes", dir, len(imgs))
			return
		}
		theImage = imgs[0].Image
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return theImage
}

// modulesDir builds testenv.ImageModules and returns the directory they are in,
// for --modules-dir.
func modulesDir(t *testing.T) string {
	t.Helper()
	var dir string
	for _, m := range testenv.ImageModules {
		wasm, err := testenv.Guest(m)
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Dir(wasm)
	}
	return dir
}

// deploymentOf reads the installed Deployment.
func deploymentOf(t *testing.T, in installed) *appsv1.Deployment {
	t.Helper()
	d, err := cp.Client().AppsV1().Deployments(in.namespace).Get(t.Context(), in.deployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func toDeployment(t *testing.T, u *unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	if u == nil {
		t.Fatal("no Deployment among the rendered objects")
	}
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func freePort(t *testing.T) int {
	t.Helper()
	n, err := portlease.Port()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
