package controlplane_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
)

// TestControlPlane starts the control plane with the garbage collector and
// checks what the tests rely on: pods are admitted without a service-account
// controller, the kubeconfig file reaches the API server, and the garbage
// collector deletes a dependent after its owner.
func TestControlPlane(t *testing.T) {
	ctx := context.Background()
	cp, err := controlplane.Start(ctx, controlplane.Options{Controllers: []string{"garbage-collector-controller"}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()

	fromFile, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(fromFile)
	owner, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
		}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("pod not admitted: %v", err)
	}
	if err := c.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = controlplane.WaitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods("default").Get(ctx, "dependent", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		// No kubelet: the pod is deleted at once once the GC asks, or
		// stays terminating with a deletionTimestamp.
		return err == nil && p.DeletionTimestamp != nil, err
	})
	if err != nil {
		t.Fatalf("garbage collector did not delete the dependent pod: %v", err)
	}
}
