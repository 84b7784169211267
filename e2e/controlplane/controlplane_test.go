package controlplane_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
)

// start starts a control plane for t, and a client of its kubeconfig file.
func start(t *testing.T, opts controlplane.Options) (*controlplane.ControlPlane, kubernetes.Interface) {
	t.Helper()
	cp, err := controlplane.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	fromFile, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cp, kubernetes.NewForConfigOrDie(fromFile)
}

// TestControlPlane starts the control plane with the garbage collector and
// checks what the tests rely on: pods are admitted without a service-account
// controller, the kubeconfig file reaches the API server, and the garbage
// collector deletes a dependent after its owner, also when kube-apiserver
// restarted in between (kube-controller-manager's watches start again).
func TestControlPlane(t *testing.T) {
	ctx := context.Background()
	cp, c := start(t, controlplane.Options{Controllers: []string{"garbage-collector-controller"}, Logf: t.Logf})
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
	if err := cp.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
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

// TestRestartAPIServer restarts kube-apiserver under a client and a watch
// made before the restart: the objects are still there (they are in etcd),
// the client works again without being made anew, the watch ends and a new
// one sees new writes, and resourceVersions go on from where they were. The
// new server is a new process as far as the cluster can tell: it holds a
// new identity Lease.
func TestRestartAPIServer(t *testing.T) {
	ctx := t.Context()
	cp, viaFile := start(t, controlplane.Options{Logf: t.Logf})
	c := cp.Client()

	before, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	identities := apiserverIdentities(ctx, t, c)
	w, err := c.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: before.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	if err := cp.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}

	// The old watch ends: its server is gone. (Bounded only so that a
	// watch kept open fails the test instead of hanging it.)
	ended := time.After(time.Minute)
	for open := true; open; {
		select {
		case _, open = <-w.ResultChan():
		case <-ended:
			t.Fatal("a watch started before the restart is still open a minute after it")
		}
	}

	for name, client := range map[string]kubernetes.Interface{"Config": c, "Kubeconfig": viaFile} {
		got, err := client.CoreV1().ConfigMaps("default").Get(ctx, "before", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("a client of %s made before the restart, after it: %v", name, err)
		}
		if got.UID != before.UID || got.ResourceVersion != before.ResourceVersion {
			t.Errorf("after the restart %s reads %s at %s, want %s at %s", name, got.UID, got.ResourceVersion, before.UID, before.ResourceVersion)
		}
	}

	list, err := c.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w2, err := c.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	after, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv(t, after.ResourceVersion) <= rv(t, before.ResourceVersion) {
		t.Errorf("resourceVersion %s written after the restart is not after %s written before it", after.ResourceVersion, before.ResourceVersion)
	}
	for ev := range w2.ResultChan() {
		if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Added && cm.Name == "after" {
			if cm.ResourceVersion != after.ResourceVersion {
				t.Errorf("the new watch saw %q at %s, created at %s", cm.Name, cm.ResourceVersion, after.ResourceVersion)
			}
			break
		}
	}

	var fresh []string
	err = controlplane.WaitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		fresh = nil
		for id := range apiserverIdentities(ctx, t, c) {
			if !identities[id] {
				fresh = append(fresh, id)
			}
		}
		return len(fresh) > 0, nil
	})
	if err != nil {
		t.Errorf("no new kube-apiserver identity Lease after the restart (before: %v): %v", identities, err)
	}
	t.Logf("identity Leases before the restart %v, new after it %v", identities, fresh)
}

// apiserverIdentities are the holders of kube-apiserver's identity Leases:
// each server process holds its own.
func apiserverIdentities(ctx context.Context, t *testing.T, c kubernetes.Interface) map[string]bool {
	t.Helper()
	leases, err := c.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity=kube-apiserver"})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity != nil {
			ids[*l.Spec.HolderIdentity] = true
		}
	}
	return ids
}

// rv is an etcd-backed resourceVersion as the number it is. Clients must
// not compare them; this test does, to show etcd's revision going on.
func rv(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return n
}
