package kubelet

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/utils/ptr"
)

// The kubelet's defaults for its heartbeats: the node's Lease in
// kube-node-lease, renewed a quarter of its duration apart, and the
// node's status, posted again at least this often when nothing changed
// (nodeLeaseDurationSeconds, nodeStatusReportFrequency).
const (
	leaseDuration  = 40 * time.Second
	leaseRenew     = leaseDuration / 4
	statusReport   = 5 * time.Minute
	nodeLeaseSpace = corev1.NamespaceNodeLease
	// maxPods is the kubelet's default --max-pods.
	maxPods = 110
)

// register creates the Node, or takes over the one of its name, and posts
// its status: without one `kubectl get nodes` says Unknown, as for a node
// whose kubelet never reported.
func (k *Kubelet) register(ctx context.Context) error {
	_, err := k.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   k.node,
		Labels: map[string]string{corev1.LabelHostname: k.node, corev1.LabelOSStable: runtime.GOOS, corev1.LabelArchStable: runtime.GOARCH},
	}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubelet: register node %s: %w", k.node, err)
	}
	if err := k.postStatus(ctx); err != nil {
		return err
	}
	return k.renewLease(ctx)
}

// heartbeat renews the node's Lease and posts its status again, as a
// kubelet does, until ctx ends.
func (k *Kubelet) heartbeat(ctx context.Context) {
	renew := time.NewTicker(leaseRenew)
	defer renew.Stop()
	posted := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
		}
		if err := k.renewLease(ctx); err != nil && ctx.Err() == nil {
			utilruntime.HandleErrorWithContext(ctx, err, "kubelet stand-in: renew the node's Lease", "node", k.node)
		}
		if time.Since(posted) < statusReport {
			continue
		}
		if err := k.postStatus(ctx); err != nil && ctx.Err() == nil {
			utilruntime.HandleErrorWithContext(ctx, err, "kubelet stand-in: post the node's status", "node", k.node)
			continue
		}
		posted = time.Now()
	}
}

// postStatus reports the node Ready, under no pressure, with this
// machine's CPUs and memory, the loopback address (where the pods'
// processes are), and the API server's version as the kubelet's: the
// stand-in is of the control plane's release.
func (k *Kubelet) postStatus(ctx context.Context) error {
	node, err := k.client.CoreV1().Nodes().Get(ctx, k.node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("kubelet: read node %s: %w", k.node, err)
	}
	now := metav1.Now()
	s := &node.Status
	s.Capacity = corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(machineMemory(), resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(maxPods, resource.DecimalSI),
	}
	s.Allocatable = s.Capacity.DeepCopy()
	s.Phase = corev1.NodeRunning
	s.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	s.NodeInfo.OperatingSystem, s.NodeInfo.Architecture = runtime.GOOS, runtime.GOARCH
	if v, err := k.client.Discovery().ServerVersion(); err == nil {
		s.NodeInfo.KubeletVersion = v.GitVersion
	}
	for _, c := range []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "the stand-in kubelet reports no memory pressure"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "the stand-in kubelet reports no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "the stand-in kubelet reports no PID pressure"},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "the stand-in kubelet is posting ready status"},
	} {
		setNodeCondition(s, c, now)
	}
	if _, err := k.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("kubelet: post the status of node %s: %w", k.node, err)
	}
	return nil
}

// setNodeCondition sets the condition of want's type, with a new heartbeat
// and, when its status changes, a new transition time.
func setNodeCondition(s *corev1.NodeStatus, want corev1.NodeCondition, now metav1.Time) {
	want.LastHeartbeatTime = now
	for i := range s.Conditions {
		if c := &s.Conditions[i]; c.Type == want.Type {
			want.LastTransitionTime = c.LastTransitionTime
			if c.Status != want.Status {
				want.LastTransitionTime = now
			}
			*c = want
			return
		}
	}
	want.LastTransitionTime = now
	s.Conditions = append(s.Conditions, want)
}

// renewLease creates or renews the node's Lease, owned by the Node as a
// kubelet's is.
func (k *Kubelet) renewLease(ctx context.Context) error {
	leases := k.client.CoordinationV1().Leases(nodeLeaseSpace)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, k.node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		node, err := k.client.CoreV1().Nodes().Get(ctx, k.node, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("kubelet: read node %s: %w", k.node, err)
		}
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.node, Namespace: nodeLeaseSpace, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(k.node),
				LeaseDurationSeconds: ptr.To(int32(leaseDuration / time.Second)),
				RenewTime:            &now,
			},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("kubelet: create the Lease of node %s: %w", k.node, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("kubelet: read the Lease of node %s: %w", k.node, err)
	}
	l.Spec.HolderIdentity, l.Spec.RenewTime = ptr.To(k.node), &now
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("kubelet: renew the Lease of node %s: %w", k.node, err)
	}
	return nil
}

// machineMemory is this machine's memory in bytes, 0 when unknown.
func machineMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
