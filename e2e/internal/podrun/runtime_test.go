package podrun_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kubeplug/kubeplug/e2e/internal/podrun"
)

const listenerImage = "example.test/listener:1"

// listener is an image whose entrypoint is testdata/listener, built for
// this machine.
func listener(t *testing.T) v1.Image {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "listener")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/listener")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build testdata/listener: %s", out)
	b, err := os.ReadFile(bin)
	require.NoError(t, err)
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "listener", Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg}))
	_, err = tw.Write(b)
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	l, err := tarball.LayerFromReader(bytes.NewReader(layer.Bytes()))
	require.NoError(t, err)
	img, err := mutate.AppendLayers(empty.Image, l)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	cf.Config.Entrypoint, cf.Config.User = []string{"/listener"}, "65532"
	img, err = mutate.ConfigFile(img, cf)
	require.NoError(t, err)
	return img
}

// apiServer stands for the API server: a TCP listener on loopback that
// accepts and closes.
func apiServer(t *testing.T) (host, port string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	host, port, err = net.SplitHostPort(l.Addr().String())
	require.NoError(t, err)
	return host, port
}

func listenerPod(name string, port int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []corev1.Container{{
				Name: "listener", Image: listenerImage,
				Env: []corev1.EnvVar{{Name: "PORT", Value: strconv.Itoa(port)}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: "/", Port: intstr.FromInt32(int32(port))}}},
			}},
		},
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("podrun runs pods chrooted, as another user, in network namespaces: it needs root")
	}
}

// awaitReady waits until the runtime reports pod ready.
func awaitReady(t *testing.T, rt *podrun.Runtime, pod *corev1.Pod) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		ready, _ := rt.Ready(pod)
		return ready, nil
	})
	require.NoError(t, err, "pod %s not ready; its log:\n%s", pod.Name, rt.Log(pod))
}

// TestOwnNetwork: two pods listening on one port both run and pass their
// readiness probes, each in its own network namespace, and each reaches
// the API server at the address it is given; on the machine's network the
// second could not bind its port. Each one's log is in LogDir too.
func TestOwnNetwork(t *testing.T) {
	requireRoot(t)
	host, port := apiServer(t)
	logs := t.TempDir()
	rt := podrun.New(podrun.Options{
		Images: map[string]v1.Image{listenerImage: listener(t)},
		Client: fake.NewClientset(), Host: host, Port: port, Dir: t.TempDir(),
		Sync: 100 * time.Millisecond, OwnNetwork: true, LogDir: logs,
	})
	t.Cleanup(rt.StopAll)
	// A port free on the machine, which the pods take in their own
	// namespaces; the machine's stays free.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	shared := l.Addr().(*net.TCPAddr).Port
	l.Close()
	pods := []*corev1.Pod{listenerPod("a", shared), listenerPod("b", shared)}
	for _, p := range pods {
		require.NoError(t, rt.Start(t.Context(), p, func() {}))
	}
	for _, p := range pods {
		awaitReady(t, rt, p)
	}
	a, _ := rt.Status(pods[0])
	b, _ := rt.Status(pods[1])
	require.NotEqual(t, a.PID, b.PID)
	require.Zero(t, a.Restarts+b.Restarts, "a pod restarted: %s%s", rt.Log(pods[0]), rt.Log(pods[1]))
	for _, p := range pods {
		b, err := os.ReadFile(filepath.Join(logs, "test_"+p.Name+"_"+string(p.UID)+".log"))
		require.NoError(t, err, "the pod's log file")
		require.Equal(t, rt.Log(p), string(b))
		require.Contains(t, string(b), "listening on :"+strconv.Itoa(shared))
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(shared)), time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("port %d answers on the machine's network: a pod listens outside its namespace", shared)
	}
}

// TestRefused: what podrun cannot run is refused with the kubelet's
// Waiting reason, before anything is unpacked.
func TestRefused(t *testing.T) {
	host, port := apiServer(t)
	dir := t.TempDir()
	rt := podrun.New(podrun.Options{
		Images: map[string]v1.Image{"kubeplug:latest": empty.Image},
		Client: fake.NewClientset(), Host: host, Port: port, Dir: dir,
	})
	t.Cleanup(rt.StopAll)
	for name, tc := range map[string]struct {
		edit   func(*corev1.Pod)
		reason string
	}{
		"an image it does not have": {func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.27" }, podrun.ReasonImageNeverPull},
		"two containers": {func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0])
		}, podrun.ReasonCreateContainer},
		"root under runAsNonRoot": {func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(0))}
		}, podrun.ReasonCreateContainerConfig},
		"a hostPath volume": {func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "h", MountPath: "/h"}}
		}, podrun.ReasonCreateContainerConfig},
	} {
		t.Run(name, func(t *testing.T) {
			p := listenerPod("x", 8080)
			p.Spec.Containers[0].Image = "docker.io/library/kubeplug:latest"
			tc.edit(p)
			err := rt.Start(t.Context(), p, func() {})
			var refused *podrun.Error
			require.True(t, errors.As(err, &refused), "error %v is no *podrun.Error", err)
			require.Equal(t, tc.reason, refused.Reason(), "%v", err)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, entries, "written before the refusal")
		})
	}
}
