package kubelet

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// waiting is an error of Runtime.Start that names the kubelet's Waiting
// reason for it: the containers cannot run as the pod asks, and trying
// again will not change that.
type waiting interface {
	error
	Reason() string
}

// notReady is the reason of a pod's Ready and ContainersReady conditions
// while a container does not run, as the kubelet gives it.
const notReady = "ContainersNotReady"

// wait reports that the pod's containers cannot run, as a kubelet reports
// an image it cannot get or a container it cannot create: phase Pending,
// scheduled and initialized, not ready, each container Waiting with reason
// and message, and a Warning event of that reason. It writes, and records
// the event, only when the status says something else: a pod the stand-in
// cannot run never shows Running.
func (k *Kubelet) wait(ctx context.Context, pod *corev1.Pod, reason, message string) error {
	if waitingFor(pod, reason, message) {
		return nil
	}
	p := pod.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = corev1.PodPending
	if p.Status.StartTime == nil {
		p.Status.StartTime = &now
	}
	p.Status.ContainerStatuses = nil
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:  c.Name,
			Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
		})
	}
	for _, typ := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized} {
		setCondition(&p.Status, corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue}, now)
	}
	why := fmt.Sprintf("containers with unready status: %v", names)
	for _, typ := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		setCondition(&p.Status, corev1.PodCondition{Type: typ, Status: corev1.ConditionFalse, Reason: notReady, Message: why}, now)
	}
	// The event first: a status written is not written again, so an event
	// lost after it would be lost for good; one repeated is harmless.
	if err := k.warn(ctx, p, reason, message); err != nil {
		return err
	}
	if _, err := k.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("report pod %s/%s waiting (%s): %w", p.Namespace, p.Name, reason, err)
	}
	return nil
}

// waitingFor says whether every container of pod is reported waiting for
// reason with message.
func waitingFor(pod *corev1.Pod, reason, message string) bool {
	if pod.Status.Phase != corev1.PodPending || len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w == nil || w.Reason != reason || w.Message != message {
			return false
		}
	}
	return true
}

// warn records a Warning event on the pod from this node's kubelet, as
// `kubectl describe pod` and `kubectl events` show a kubelet's.
func (k *Kubelet) warn(ctx context.Context, pod *corev1.Pod, reason, message string) error {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: fmt.Sprintf("%s.%x", pod.Name, time.Now().UnixNano())},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion,
		},
		Type: corev1.EventTypeWarning, Reason: reason, Message: message,
		Source:         corev1.EventSource{Component: "kubelet", Host: k.node},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "kubelet", ReportingInstance: k.node,
	}
	if _, err := k.client.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("record event %s on pod %s/%s: %w", reason, pod.Namespace, pod.Name, err)
	}
	return nil
}
