package kubelet_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
)

// reasonError is a Start error that names the kubelet's Waiting reason.
type reasonError struct{ reason, msg string }

func (e reasonError) Error() string  { return e.msg }
func (e reasonError) Reason() string { return e.reason }

// refusingRuntime cannot run any pod, for reason.
type refusingRuntime struct {
	err    error
	mu     sync.Mutex
	starts int
}

func (r *refusingRuntime) Start(context.Context, *corev1.Pod, func()) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts++
	return r.err
}
func (r *refusingRuntime) Ready(*corev1.Pod) (bool, int32) { return false, 0 }
func (r *refusingRuntime) Stop(*corev1.Pod)                {}
func (r *refusingRuntime) ImageID(*corev1.Pod) string      { return "" }

// refusedPod starts a stand-in serving namespace run with a runtime whose
// every start fails with err, and creates the pod run/web-0.
func refusedPod(t *testing.T, err error) (*fake.Clientset, *kubelet.Kubelet, *refusingRuntime) {
	t.Helper()
	c := newClient(t)
	k, serr := kubelet.Start(t.Context(), c, "")
	require.NoError(t, serr)
	t.Cleanup(k.Stop)
	rt := &refusingRuntime{err: err}
	k.ServeWith("run", rt)
	_, serr = c.CoreV1().Pods("run").Create(t.Context(), pod("run", "web-0"), metav1.CreateOptions{})
	require.NoError(t, serr)
	return c, k, rt
}

// TestCannotRun: a pod whose containers the runtime cannot run is not
// reported Running: it stays Pending, its container waits for the
// runtime's reason with its message, it is not Ready, and one Warning
// event of that reason says why. Before, the stand-in retried the start
// for ever and the pod showed nothing.
func TestCannotRun(t *testing.T) {
	ctx := t.Context()
	const why = `image "nginx:1.27" is not on this node`
	c, k, _ := refusedPod(t, reasonError{"ErrImageNeverPull", why})

	eventually(t, "web-0 waiting", func() (bool, error) {
		p := get(t, c, "run", "web-0")
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil, nil
	})
	p := get(t, c, "run", "web-0")
	require.Equal(t, corev1.PodPending, p.Status.Phase)
	require.Equal(t, k.Node(), p.Spec.NodeName)
	require.False(t, kubelet.RunningAndReady(p))
	w := p.Status.ContainerStatuses[0].State.Waiting
	require.Equal(t, "ErrImageNeverPull", w.Reason)
	require.Equal(t, why, w.Message)
	require.False(t, p.Status.ContainerStatuses[0].Ready)
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady || cond.Type == corev1.ContainersReady {
			require.Equal(t, corev1.ConditionFalse, cond.Status, "condition %s", cond.Type)
		}
	}
	evs, err := c.CoreV1().Events("run").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, evs.Items, 1)
	ev := evs.Items[0]
	require.Equal(t, corev1.EventTypeWarning, ev.Type)
	require.Equal(t, "ErrImageNeverPull", ev.Reason)
	require.Equal(t, why, ev.Message)
	require.Equal(t, "web-0", ev.InvolvedObject.Name)
	require.Equal(t, "kubelet", ev.Source.Component)
}

// TestStartRetried: an error without a reason is retried, as a volume
// not yet readable is, and the pod runs once the runtime can start it.
func TestStartRetried(t *testing.T) {
	c, _, rt := refusedPod(t, errors.New("configmap not there yet"))
	eventually(t, "a second start", func() (bool, error) {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return rt.starts >= 2, nil
	})
	require.Empty(t, get(t, c, "run", "web-0").Status.ContainerStatuses, "a start to be retried was reported")
}
