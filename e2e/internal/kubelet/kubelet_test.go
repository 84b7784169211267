package kubelet_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
)

// newClient is a fake clientset whose pods/binding sets spec.nodeName, as
// kube-apiserver's does.
func newClient(t *testing.T) *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := a.(k8stesting.CreateAction).GetObject().(*corev1.Binding)
		obj, err := c.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod).DeepCopy()
		if pod.Spec.NodeName != "" {
			t.Errorf("pod %s/%s bound twice", pod.Namespace, pod.Name)
		}
		pod.Spec.NodeName = b.Target.Name
		return true, b, c.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, pod.Namespace)
	})
	return c
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func get(t *testing.T, c *fake.Clientset, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// serving starts a stand-in on a fake client, serving namespace test.
func serving(t *testing.T) (*fake.Clientset, *kubelet.Kubelet) {
	t.Helper()
	c := newClient(t)
	k, err := kubelet.Start(t.Context(), c, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	k.Serve("test")
	return c, k
}

// eventually polls cond until it holds; the timeout bounds a hung test.
// (testenv.Eventually would link the whole control plane into this test.)
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func awaitRunning(t *testing.T, c *fake.Clientset, k *kubelet.Kubelet, ns, name string) {
	t.Helper()
	eventually(t, ns+"/"+name+" running", func() (bool, error) {
		p := get(t, c, ns, name)
		return p != nil && p.Spec.NodeName == k.Node() && kubelet.RunningAndReady(p), nil
	})
}

func TestKubelet(t *testing.T) {
	ctx := t.Context()
	c := newClient(t)
	k, err := kubelet.Start(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	if _, err := c.CoreV1().Nodes().Get(ctx, kubelet.DefaultNode, metav1.GetOptions{}); err != nil {
		t.Errorf("node not registered: %v", err)
	}

	// A pod of a namespace it does not serve, created first, so that its
	// event has been dropped by the time the served pods have been run.
	if _, err := c.CoreV1().Pods("other").Create(ctx, pod("other", "web-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k.Serve("test")
	if _, err := c.CoreV1().Pods("test").Create(ctx, pod("test", "web-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitRunning(t, c, k, "test", "web-0")
	p := get(t, c, "test", "web-0")
	for _, typ := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		found := false
		for _, cond := range p.Status.Conditions {
			found = found || cond.Type == typ && cond.Status == corev1.ConditionTrue
		}
		if !found {
			t.Errorf("condition %s not True: %+v", typ, p.Status.Conditions)
		}
	}
	if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].Name != "app" || !cs[0].Ready || cs[0].State.Running == nil {
		t.Errorf("container statuses %+v, want app running and ready", cs)
	}

	// A terminating pod stays while held, and is deleted with grace period
	// 0 and its UID as precondition once released.
	release := k.HoldTerminations("test")
	now := metav1.Now()
	grace := int64(30)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	if err := c.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("test").Create(ctx, pod("test", "web-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitRunning(t, c, k, "test", "web-1")
	if get(t, c, "test", "web-0") == nil {
		t.Fatal("terminating pod deleted while its namespace was held")
	}
	release()
	release() // idempotent
	eventually(t, "terminating pod deleted", func() (bool, error) {
		return get(t, c, "test", "web-0") == nil, nil
	})
	var deletes int
	for _, a := range c.Actions() {
		switch a := a.(type) {
		case k8stesting.DeleteAction:
			deletes++
			o := a.GetDeleteOptions()
			if a.GetName() != "web-0" || o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 ||
				o.Preconditions == nil || o.Preconditions.UID == nil || *o.Preconditions.UID != p.UID {
				t.Errorf("delete %s with %+v, want web-0 with grace period 0 and its UID as precondition", a.GetName(), o)
			}
		}
		if a.GetNamespace() == "other" && a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "create" {
			t.Errorf("%s %s in a namespace it does not serve", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if deletes != 1 {
		t.Errorf("%d deletes, want 1", deletes)
	}
	if o := get(t, c, "other", "web-0"); o.Spec.NodeName != "" || o.Status.Phase != corev1.PodPending {
		t.Errorf("pod of a namespace it does not serve was changed: node %q, phase %s", o.Spec.NodeName, o.Status.Phase)
	}
}

// fakeRuntime is a Runtime whose readiness and restarts the test sets.
type fakeRuntime struct {
	mu       sync.Mutex
	ready    bool
	restarts int32
	started  []string
	stopped  []string
	changed  func()
}

func (f *fakeRuntime) Start(_ context.Context, p *corev1.Pod, changed func()) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.started = append(f.started, p.Name)
		f.changed = changed
	}
	return nil
}

func (f *fakeRuntime) ImageID(p *corev1.Pod) string { return "id-of-" + p.Spec.Containers[0].Image }

func (f *fakeRuntime) Ready(*corev1.Pod) (bool, int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ready, f.restarts
}

func (f *fakeRuntime) Stop(p *corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = append(f.stopped, p.Name)
}

func (f *fakeRuntime) set(ready bool, restarts int32) {
	f.mu.Lock()
	f.ready, f.restarts = ready, restarts
	changed := f.changed
	f.mu.Unlock()
	changed()
}

// TestServeWith: a pod whose containers a Runtime runs is Running but not
// Ready until the runtime says so, reports its restarts, follows the
// runtime back to not ready, and is stopped before its deletion completes.
func TestServeWith(t *testing.T) {
	ctx := t.Context()
	c := newClient(t)
	k, err := kubelet.Start(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	rt := &fakeRuntime{}
	k.ServeWith("run", rt)
	if _, err := c.CoreV1().Pods("run").Create(ctx, pod("run", "host-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "host-0 running, not ready", func() (bool, error) {
		p := get(t, c, "run", "host-0")
		return p != nil && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1, nil
	})
	if p := get(t, c, "run", "host-0"); kubelet.RunningAndReady(p) || p.Status.ContainerStatuses[0].Ready {
		t.Fatalf("pod reported ready before its runtime said so: %+v", p.Status)
	}
	rt.set(true, 0)
	awaitRunning(t, c, k, "run", "host-0")
	if id := get(t, c, "run", "host-0").Status.ContainerStatuses[0].ImageID; id != "id-of-pause" {
		t.Errorf("imageID %q, want the runtime's", id)
	}
	rt.set(false, 2)
	eventually(t, "host-0 not ready after two restarts", func() (bool, error) {
		p := get(t, c, "run", "host-0")
		return !kubelet.RunningAndReady(p) && p.Status.ContainerStatuses[0].RestartCount == 2, nil
	})

	p := get(t, c, "run", "host-0")
	now := metav1.Now()
	p.DeletionTimestamp = &now
	if err := c.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, "run"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "host-0 deleted", func() (bool, error) { return get(t, c, "run", "host-0") == nil, nil })
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.started) != 1 || len(rt.stopped) != 1 {
		t.Errorf("runtime started %v and stopped %v, want host-0 once each", rt.started, rt.stopped)
	}
}

// TestHoldUnready: a held pod runs but is not Ready, a pod already Ready
// turns not Ready, and on release it is Ready again with a new transition
// time.
func TestHoldUnready(t *testing.T) {
	ctx := t.Context()
	c, k := serving(t)
	if _, err := c.CoreV1().Pods("test").Create(ctx, pod("test", "web-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitRunning(t, c, k, "test", "web-0")
	readySince := func(p *corev1.Pod) (corev1.ConditionStatus, metav1.Time) {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady {
				return cond.Status, cond.LastTransitionTime
			}
		}
		return "", metav1.Time{}
	}
	release := k.HoldUnready("test", "web-0")
	var unreadyAt metav1.Time
	eventually(t, "web-0 running, not Ready", func() (bool, error) {
		p := get(t, c, "test", "web-0")
		st, at := readySince(p)
		unreadyAt = at
		return p.Status.Phase == corev1.PodRunning && st == corev1.ConditionFalse, nil
	})
	if _, err := c.CoreV1().Pods("test").Create(ctx, pod("test", "web-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitRunning(t, c, k, "test", "web-1")
	if p := get(t, c, "test", "web-0"); kubelet.RunningAndReady(p) {
		t.Fatalf("held pod web-0 reported Ready: %+v", p.Status.Conditions)
	}
	release()
	release() // idempotent
	awaitRunning(t, c, k, "test", "web-0")
	if _, at := readySince(get(t, c, "test", "web-0")); at.Before(&unreadyAt) {
		t.Errorf("Ready since %v, before it turned not Ready at %v", at, unreadyAt)
	}
}

// A pod whose claim does not exist, or is being deleted, is left
// unscheduled, as the scheduler's VolumeBinding leaves it, and runs once
// the claim is there.
func TestPodWaitsForItsClaims(t *testing.T) {
	ctx := t.Context()
	c, k := serving(t)
	now := metav1.Now()
	gone := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "data-web-1", DeletionTimestamp: &now, Finalizers: []string{"kubernetes.io/pvc-protection"}}}
	if _, err := c.CoreV1().PersistentVolumeClaims("test").Create(ctx, gone, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-0", "web-1"} {
		p := pod("test", name)
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + name}}}}
		if _, err := c.CoreV1().Pods("test").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Each claim looked at twice: the first look did not bind its pod.
	looks := func(claim string) int {
		n := 0
		for _, a := range c.Actions() {
			if g, ok := a.(k8stesting.GetAction); ok && a.GetResource().Resource == "persistentvolumeclaims" && g.GetName() == claim {
				n++
			}
		}
		return n
	}
	eventually(t, "both claims looked at twice", func() (bool, error) { return looks("data-web-0") >= 2 && looks("data-web-1") >= 2, nil })
	for name, why := range map[string]string{"web-0": `"data-web-0" not found`, "web-1": `"data-web-1" is being deleted`} {
		if p := get(t, c, "test", name); p.Spec.NodeName != "" {
			t.Errorf("pod %s bound with its claim missing or being deleted", name)
		}
		awaitUnschedulable(t, c, name, why)
	}
	if _, err := c.CoreV1().PersistentVolumeClaims("test").Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "data-web-0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitRunning(t, c, k, "test", "web-0")
	if p := get(t, c, "test", "web-1"); p.Spec.NodeName != "" {
		t.Error("pod web-1 bound with its claim being deleted")
	}
	// The claim goes: the pod's condition says so, the update that
	// makes kube-controller-manager create the claim again.
	if err := c.CoreV1().PersistentVolumeClaims("test").Delete(ctx, "data-web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitUnschedulable(t, c, "web-1", `"data-web-1" not found`)
}

// awaitUnschedulable waits until pod name in namespace test is reported
// unschedulable, as the scheduler reports it, for a reason containing why.
func awaitUnschedulable(t *testing.T, c *fake.Clientset, name, why string) {
	t.Helper()
	eventually(t, "pod "+name+" unschedulable: "+why, func() (bool, error) {
		for _, cond := range get(t, c, "test", name).Status.Conditions {
			if cond.Type == corev1.PodScheduled {
				return cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable &&
					cond.Message == "0/1 nodes are available: persistentvolumeclaim "+why+".", nil
			}
		}
		return false, nil
	})
}
