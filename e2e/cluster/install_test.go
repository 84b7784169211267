package cluster_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
	"github.com/kubeplug/kubeplug/e2e/internal/manifests"
	"github.com/kubeplug/kubeplug/e2e/internal/podrun"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// wait bounds each wait on a hung test; it is not a performance assertion.
const wait = 5 * time.Minute

// installNamespace is where README's install puts the host, by either
// method.
const installNamespace = "kubeplug-system"

// kubectl runs kubectl as a user in the repository's root runs it, on the
// cluster's kubeconfig, and returns its standard output.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := testenv.Kubectl()
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = testenv.Root()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubectl %s: %s%s", strings.Join(args, " "), out, stderr.String())
	return string(out)
}

// TestNode: the node is Ready and the server's version is the release's,
// as kubectl shows them; before, the node was Unknown and kubectl could
// not parse the version.
func TestNode(t *testing.T) {
	out := kubectl(t, "get", "node", c.Kubelet.Node(), "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
	require.Equal(t, "True", out)
	var v struct {
		ServerVersion struct{ GitVersion string } `json:"serverVersion"`
	}
	require.NoError(t, json.Unmarshal([]byte(kubectl(t, "version", "-o", "json")), &v))
	require.Equal(t, controlplane.Version, v.ServerVersion.GitVersion)
}

// TestKustomizeInstall follows README's install on make cluster with
// kubectl: apply the base, watch the Deployment's two pods become Ready
// running the built image, delete the base and see the namespace go.
func TestKustomizeInstall(t *testing.T) {
	// The CRD first, where the checkout installs it apart from the host
	// (deploy/crds, which Uninstall leaves): README's first step.
	if _, err := os.Stat(filepath.Join(testenv.Root(), "deploy", "crds")); err == nil {
		kubectl(t, "apply", "-k", "deploy/crds")
	}
	kubectl(t, "apply", "-k", "deploy/")
	kubectl(t, "-n", installNamespace, "rollout", "status", "deployment/kubeplug", "--timeout="+wait.String())
	pods := requireRunning(t, "kubeplug", 2)
	kubectl(t, "delete", "-k", "deploy/", "--timeout="+wait.String())
	requireGone(t, pods)
}

// TestHelmInstall follows README's install on make cluster with Helm:
// the namespace made and labelled restricted, the chart installed with its
// default values (Helm's SDK, as helm install --wait: the kubeVersion
// check reads the server's version), two Ready pods running the built
// image, then helm uninstall and the namespace deleted.
func TestHelmInstall(t *testing.T) {
	kubectl(t, "create", "namespace", installNamespace)
	kubectl(t, "label", "namespace", installNamespace, "pod-security.kubernetes.io/enforce=restricted")
	settings := cli.New()
	settings.KubeConfig = c.Kubeconfig
	settings.SetNamespace(installNamespace)
	cfg := new(action.Configuration)
	require.NoError(t, cfg.Init(settings.RESTClientGetter(), installNamespace, "secret", t.Logf))
	chart, err := loader.Load(manifests.ChartDir())
	require.NoError(t, err)
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.Wait, install.Timeout = "kubeplug", installNamespace, true, wait
	_, err = install.RunWithContext(t.Context(), chart, nil)
	require.NoError(t, err, "helm install")
	pods := requireRunning(t, "kubeplug", 2)

	_, err = action.NewUninstall(cfg).Run("kubeplug")
	require.NoError(t, err, "helm uninstall")
	kubectl(t, "delete", "namespace", installNamespace, "--timeout="+wait.String())
	requireGone(t, pods)
}

// TestImageNotOnTheNode: a pod of an image the node does not hold is not
// reported Running: it stays Pending, its container waiting with
// ErrImageNeverPull, and a Warning event says which images the node runs.
// Before, the stand-in called any pod Running while nothing ran.
func TestImageNotOnTheNode(t *testing.T) {
	ns := testenv.Namespace(t, c.Client())
	kubectl(t, "-n", ns, "run", "web", "--image=nginx:1.27")
	var pod *corev1.Pod
	testenv.Eventually(t, wait, "pod web waiting", func() (bool, error) {
		var err error
		pod, err = c.Client().CoreV1().Pods(ns).Get(t.Context(), "web", metav1.GetOptions{})
		return err == nil && len(pod.Status.ContainerStatuses) == 1 && pod.Status.ContainerStatuses[0].State.Waiting != nil, err
	})
	require.Equal(t, corev1.PodPending, pod.Status.Phase)
	require.False(t, kubelet.RunningAndReady(pod))
	w := pod.Status.ContainerStatuses[0].State.Waiting
	require.Equal(t, podrun.ReasonImageNeverPull, w.Reason)
	require.Contains(t, w.Message, `"nginx:1.27" is not on this node`)
	for _, name := range c.Images() {
		require.Contains(t, w.Message, name)
	}
	events := kubectl(t, "-n", ns, "get", "events", "--field-selector", "involvedObject.name=web,type=Warning", "-o", "jsonpath={.items[*].reason}")
	require.Equal(t, podrun.ReasonImageNeverPull, events)
	_, running := c.Runtime.Status(pod)
	require.False(t, running, "the runtime runs a process for the pod")
}

// requireRunning waits for the n pods of Deployment name in the install's
// namespace to be Running and Ready, and checks that each is a process of
// the built image in a network namespace of its own, whose log shows no
// request the API server forbade.
func requireRunning(t *testing.T, name string, n int) []running {
	t.Helper()
	ctx := t.Context()
	d, err := c.Client().AppsV1().Deployments(installNamespace).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels).String()
	var pods []*corev1.Pod
	testenv.Eventually(t, wait, "the Deployment's pods to be ready", func() (bool, error) {
		list, err := c.Client().CoreV1().Pods(installNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err
		}
		pods = nil
		for i := range list.Items {
			if p := &list.Items[i]; kubelet.RunningAndReady(p) && p.DeletionTimestamp == nil {
				pods = append(pods, p)
			}
		}
		return len(pods) == n, nil
	})
	digest := builtDigest(t)
	self, err := os.Readlink("/proc/self/ns/net")
	require.NoError(t, err)
	nets := map[string]bool{}
	var out []running
	for _, p := range pods {
		require.True(t, strings.HasSuffix(p.Status.ContainerStatuses[0].ImageID, "@"+digest),
			"pod %s runs image %s, not the built %s", p.Name, p.Status.ContainerStatuses[0].ImageID, digest)
		s, ok := c.Runtime.Status(p)
		require.True(t, ok && s.Running, "no process runs pod %s", p.Name)
		exe, err := os.Readlink("/proc/" + strconv.Itoa(s.PID) + "/exe")
		require.NoError(t, err)
		require.True(t, strings.HasSuffix(exe, "/kubeplug"), "pod %s runs %s, not the image's entrypoint", p.Name, exe)
		net, err := os.Readlink("/proc/" + strconv.Itoa(s.PID) + "/ns/net")
		require.NoError(t, err)
		require.NotEqual(t, self, net, "pod %s shares the machine's network", p.Name)
		nets[net] = true
		log := c.Runtime.Log(p)
		require.NotContains(t, strings.ToLower(log), "forbidden", "pod %s's log", p.Name)
		onDisk, err := os.ReadFile(filepath.Join(logDir, installNamespace+"_"+p.Name+"_"+string(p.UID)+".log"))
		require.NoError(t, err, "pod %s's log file", p.Name)
		require.NotEmpty(t, onDisk, "pod %s's log file", p.Name)
		out = append(out, running{p, s.PID})
	}
	require.Len(t, nets, n, "pods share a network namespace")
	return out
}

// running is a pod and its process.
type running struct {
	pod *corev1.Pod
	pid int
}

// requireGone waits for the install's namespace to be gone, which the
// namespace controller finishes once the node has stopped its pods, and
// checks that their processes have ended.
func requireGone(t *testing.T, pods []running) {
	t.Helper()
	testenv.Eventually(t, wait, "namespace "+installNamespace+" gone", func() (bool, error) {
		_, err := c.Client().CoreV1().Namespaces().Get(t.Context(), installNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	for _, p := range pods {
		_, ok := c.Runtime.Status(p.pod)
		require.False(t, ok, "the runtime still holds pod %s", p.pod.Name)
		require.ErrorIs(t, syscall.Kill(p.pid, 0), syscall.ESRCH, "the process of pod %s, %d, is still there", p.pod.Name, p.pid)
	}
}

// builtDigest is the digest of the image the node holds.
func builtDigest(t *testing.T) string {
	t.Helper()
	dir, err := testenv.ImageLayout()
	require.NoError(t, err)
	imgs, err := podrun.ReadLayout(dir)
	require.NoError(t, err)
	d, err := imgs[0].Image.Digest()
	require.NoError(t, err)
	return d.String()
}
