package kubelet_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"

	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
)

// TestNodeStatus: the node is registered Ready, with an address, capacity
// and the API server's version as its kubelet's, and holds its Lease in
// kube-node-lease, owned by the Node; before, it had no status at all and
// kubectl get nodes said Unknown.
func TestNodeStatus(t *testing.T) {
	ctx := t.Context()
	c := newClient(t)
	c.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.37.1"}
	k, err := kubelet.Start(ctx, c, "")
	require.NoError(t, err)
	t.Cleanup(k.Stop)

	node, err := c.CoreV1().Nodes().Get(ctx, k.Node(), metav1.GetOptions{})
	require.NoError(t, err)
	ready := false
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = cond.Status == corev1.ConditionTrue && !cond.LastHeartbeatTime.IsZero()
		} else {
			require.Equal(t, corev1.ConditionFalse, cond.Status, "condition %s", cond.Type)
		}
	}
	require.True(t, ready, "node not Ready: %+v", node.Status.Conditions)
	require.Equal(t, []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}, node.Status.Addresses)
	require.Equal(t, "v1.37.1", node.Status.NodeInfo.KubeletVersion)
	require.False(t, node.Status.Allocatable.Cpu().IsZero(), "no CPUs allocatable")
	require.Equal(t, int64(110), node.Status.Allocatable.Pods().Value())

	lease, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, k.Node(), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, k.Node(), *lease.Spec.HolderIdentity)
	require.NotNil(t, lease.Spec.RenewTime)
	require.Len(t, lease.OwnerReferences, 1)
	require.Equal(t, "Node", lease.OwnerReferences[0].Kind)
	require.Equal(t, node.UID, lease.OwnerReferences[0].UID)
}
