package kubelet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// DefaultNode names the node when Start is given none.
const DefaultNode = "kubeplug-e2e-node"

// workers sync pods concurrently: each sync is one API call.
const workers = 2

// Kubelet is the stand-in for one node: Start it, then Serve the namespaces
// whose pods it runs. Only keys are queued; each sync reads the pod from the
// informer's cache and makes at most one API call.
type Kubelet struct {
	node   string
	client kubernetes.Interface
	pods   corelisters.PodLister
	queue  workqueue.TypedRateLimitingInterface[string]

	mu       sync.Mutex
	served   map[string]bool
	held     map[string]int
	runtimes map[string]Runtime
	// unready holds the keys of pods reported not Ready (HoldUnready).
	unready map[string]int

	cancel  context.CancelFunc
	factory informers.SharedInformerFactory
	wg      sync.WaitGroup
}

// Start registers node (DefaultNode when empty) as a Node with its status
// (Ready) and Lease, which it keeps renewing, starts a pod informer on c
// for every namespace and the workers, and returns once the cache has
// synced. It serves no namespace yet: see Serve. Stop, or the end
// of ctx, stops it.
func Start(ctx context.Context, c kubernetes.Interface, node string) (*Kubelet, error) {
	if node == "" {
		node = DefaultNode
	}
	ctx, cancel := context.WithCancel(ctx)
	k := &Kubelet{
		node:   node,
		client: c,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "kubelet-" + node},
		),
		served:   map[string]bool{},
		held:     map[string]int{},
		unready:  map[string]int{},
		runtimes: map[string]Runtime{},
		cancel:   cancel,
		factory:  informers.NewSharedInformerFactory(c, 0),
	}
	if err := k.register(ctx); err != nil {
		cancel()
		return nil, err
	}
	inf := k.factory.Core().V1().Pods()
	k.pods = inf.Lister()
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    k.enqueue,
		UpdateFunc: func(_, obj any) { k.enqueue(obj) },
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("kubelet: watch pods: %w", err)
	}
	k.factory.Start(ctx.Done())
	for typ, ok := range k.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			k.Stop()
			return nil, fmt.Errorf("kubelet: cache of %v did not sync", typ)
		}
	}
	for range workers {
		k.wg.Go(func() { wait.UntilWithContext(ctx, k.runWorker, time.Second) })
	}
	k.wg.Go(func() { k.heartbeat(ctx) })
	go func() {
		<-ctx.Done()
		k.queue.ShutDown()
	}()
	return k, nil
}

// Node is the name of the node the pods are bound to.
func (k *Kubelet) Node() string { return k.node }

// Stop stops the workers and the informer and waits for them.
func (k *Kubelet) Stop() {
	k.cancel()
	k.queue.ShutDown()
	k.wg.Wait()
	k.factory.Shutdown()
}

// Serve makes the pods of ns, present and future, this node's.
func (k *Kubelet) Serve(ns string) {
	k.mu.Lock()
	k.served[ns] = true
	k.mu.Unlock()
	k.enqueueNamespace(ns)
}

// Runtime runs the containers of the pods of a namespace for real (see
// e2e/internal/podrun); without one a pod's containers are only reported
// running.
type Runtime interface {
	// Start runs the pod's containers unless they run already; changed
	// is called whenever what Ready reports may have changed. An error
	// with a Reason (a Waiting reason of the kubelet's, such as
	// ErrImageNeverPull or CreateContainerConfigError) says that the
	// containers cannot run as the pod asks: the pod is reported Pending
	// with its containers waiting for that reason, and a Warning event
	// says why. Any other error is retried.
	Start(ctx context.Context, pod *corev1.Pod, changed func()) error
	// Ready reports whether the pod's containers run and pass their
	// readiness probes, and how often they were restarted.
	Ready(pod *corev1.Pod) (ready bool, restarts int32)
	// Stop stops the pod's containers, as at the end of its grace period.
	Stop(pod *corev1.Pod)
	// ImageID is the image the pod's container runs, by digest, as the
	// kubelet reports it in the container's imageID; "" when not known.
	ImageID(pod *corev1.Pod) string
}

// ServeWith makes the pods of ns this node's, as Serve does, with their
// containers run by rt.
func (k *Kubelet) ServeWith(ns string, rt Runtime) {
	k.mu.Lock()
	k.runtimes[ns] = rt
	k.mu.Unlock()
	k.Serve(ns)
}

// HoldTerminations keeps the pods of ns that are being deleted terminating,
// as a kubelet whose containers are slow to stop would, until release is
// called: a way to let the controllers see a terminating pod for as long as
// a test needs, without timing anything. Holds nest; release is idempotent.
func (k *Kubelet) HoldTerminations(ns string) (release func()) {
	k.mu.Lock()
	k.held[ns]++
	k.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			k.mu.Lock()
			if k.held[ns]--; k.held[ns] == 0 {
				delete(k.held, ns)
			}
			k.mu.Unlock()
			k.enqueueNamespace(ns)
		})
	}
}

// HoldUnready reports pod ns/name Running but not Ready (Ready and
// ContainersReady False), as a kubelet whose readiness probe fails would,
// until release is called; then it is Ready again, with a new transition
// time. Holds nest; release is idempotent.
func (k *Kubelet) HoldUnready(ns, name string) (release func()) {
	key := ns + "/" + name
	k.mu.Lock()
	k.unready[key]++
	k.mu.Unlock()
	k.queue.Add(key)
	var once sync.Once
	return func() {
		once.Do(func() {
			k.mu.Lock()
			if k.unready[key]--; k.unready[key] == 0 {
				delete(k.unready, key)
			}
			k.mu.Unlock()
			k.queue.Add(key)
		})
	}
}

func (k *Kubelet) holdsUnready(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.unready[key] > 0
}

func (k *Kubelet) serves(ns string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.served[ns]
}

func (k *Kubelet) runtime(ns string) Runtime {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.runtimes[ns]
}

func (k *Kubelet) holds(ns string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.held[ns] > 0
}

func (k *Kubelet) enqueue(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !k.serves(pod.Namespace) {
		return
	}
	k.queue.Add(pod.Namespace + "/" + pod.Name)
}

func (k *Kubelet) enqueueNamespace(ns string) {
	pods, err := k.pods.Pods(ns).List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, p := range pods {
		k.enqueue(p)
	}
}

func (k *Kubelet) runWorker(ctx context.Context) {
	for k.processNextWorkItem(ctx) {
	}
}

func (k *Kubelet) processNextWorkItem(ctx context.Context) bool {
	key, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(key)
	if err := k.sync(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "kubelet stand-in: sync pod", "pod", key)
		k.queue.AddRateLimited(key)
		return true
	}
	k.queue.Forget(key)
	return true
}

// sync brings the pod of key one step closer to what a node would make of
// it. A conflict or a pod already gone is no error: the informer brings the
// change that caused it, and the pod is synced again.
func (k *Kubelet) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	if !k.serves(ns) {
		return nil
	}
	pod, err := k.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil:
		var why string
		if why, err = k.unschedulable(ctx, pod); err != nil {
			break
		}
		if why != "" {
			k.queue.AddAfter(key, claimWait) // as the scheduler retries it
			err = k.leaveUnscheduled(ctx, pod, why)
			break
		}
		err = k.bind(ctx, pod)
	case pod.Spec.NodeName != k.node:
		// Another node's, or unscheduled and already being deleted
		// (only a finalizer keeps such a pod).
		return nil
	case pod.DeletionTimestamp != nil:
		if k.holds(ns) {
			return nil
		}
		if rt := k.runtime(ns); rt != nil {
			rt.Stop(pod)
		}
		err = k.finishDeletion(ctx, pod)
	case k.holdsUnready(key):
		if pod.Status.Phase != corev1.PodRunning || RunningAndReady(pod) {
			err = k.run(ctx, pod, false, 0)
		}
	default:
		err = k.runContainers(ctx, pod)
	}
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// claimWait is how long a pod left unscheduled for its claims waits
// before it is looked at again. The scheduler looks again sooner on a
// claim's creation or update, and later otherwise: a claim's deletion
// queues no pod, and it retries a pod left unschedulable after five
// minutes (DefaultPodMaxInUnschedulablePodsDuration in 1.37). One fixed
// wait keeps the stand-in simple, and tests short.
const claimWait = 250 * time.Millisecond

// unschedulable says why the scheduler would leave pod unscheduled for its
// volumes, "" when it would not: as its VolumeBinding plugin, a claim
// that does not exist or is being deleted. (Binding the claims is left out:
// the tests' provisioners bind at once.) A pod left so is not mounting its
// claims, so pvc-protection lets a terminating claim go, and
// kube-controller-manager's StatefulSet controller creates the missing
// claims of a Pending replica.
func (k *Kubelet) unschedulable(ctx context.Context, pod *corev1.Pod) (string, error) {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		name := v.PersistentVolumeClaim.ClaimName
		c, err := k.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("persistentvolumeclaim %q not found", name), nil
		case err != nil:
			return "", fmt.Errorf("read claim %s/%s of pod %s: %w", pod.Namespace, name, pod.Name, err)
		case c.DeletionTimestamp != nil:
			return fmt.Sprintf("persistentvolumeclaim %q is being deleted", name), nil
		}
	}
	return "", nil
}

// leaveUnscheduled reports why the pod was not scheduled, as the
// scheduler does when it fails to place a pod: condition PodScheduled
// False, reason Unschedulable, the message its FitError makes of a
// PreFilter rejection on one node. Like the scheduler it writes only when
// the condition changes. That write is what moves
// kube-controller-manager: its StatefulSet controller syncs the set on the
// pod's update, and creates the claims a Pending replica lacks
// (createMissingPersistentVolumeClaims), which it does not do when a claim
// that was being deleted is finally gone, as it watches no claims.
func (k *Kubelet) leaveUnscheduled(ctx context.Context, pod *corev1.Pod, why string) error {
	p := pod.DeepCopy()
	if !setCondition(&p.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: fmt.Sprintf("0/1 nodes are available: %s.", why)}, metav1.Now()) {
		return nil
	}
	if _, err := k.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("report pod %s/%s unschedulable: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// bind assigns the pod to the node, as the scheduler does.
func (k *Kubelet) bind(ctx context.Context, pod *corev1.Pod) error {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: k.node},
	}
	if err := k.client.CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("bind pod %s/%s to %s: %w", pod.Namespace, pod.Name, k.node, err)
	}
	return nil
}

// runContainers starts the pod's containers, when its namespace has a
// Runtime, and reports them as they are: running, and ready or not.
func (k *Kubelet) runContainers(ctx context.Context, pod *corev1.Pod) error {
	ready, restarts := true, int32(0)
	if rt := k.runtime(pod.Namespace); rt != nil {
		key := pod.Namespace + "/" + pod.Name
		if err := rt.Start(ctx, pod, func() { k.queue.Add(key) }); err != nil {
			var w waiting
			if errors.As(err, &w) {
				return k.wait(ctx, pod, w.Reason(), w.Error())
			}
			return err
		}
		ready, restarts = rt.Ready(pod)
	}
	if reported(pod, ready, restarts) {
		return nil
	}
	return k.run(ctx, pod, ready, restarts)
}

// reported says whether the pod's status already says what run would.
func reported(pod *corev1.Pod, ready bool, restarts int32) bool {
	if pod.Status.Phase != corev1.PodRunning || len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Ready != ready || cs.RestartCount != restarts {
			return false
		}
	}
	return RunningAndReady(pod) == ready
}

// run reports the pod's containers started, and ready or not.
func (k *Kubelet) run(ctx context.Context, pod *corev1.Pod, ready bool, restarts int32) error {
	p := pod.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	if p.Status.StartTime == nil {
		p.Status.StartTime = &now
	}
	started := true
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		id := c.Image
		if rt := k.runtime(p.Namespace); rt != nil {
			id = rt.ImageID(p)
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:         c.Name,
			Image:        c.Image,
			ImageID:      id,
			Ready:        ready,
			RestartCount: restarts,
			Started:      &started,
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	for _, typ := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized} {
		setCondition(&p.Status, corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue}, now)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	for _, typ := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		setCondition(&p.Status, corev1.PodCondition{Type: typ, Status: status}, now)
	}
	if _, err := k.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("report pod %s/%s running: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// finishDeletion deletes the terminating pod for good, as a kubelet does
// once its containers have stopped.
func (k *Kubelet) finishDeletion(ctx context.Context, pod *corev1.Pod) error {
	zero := int64(0)
	err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil {
		return fmt.Errorf("delete terminating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// setCondition sets the condition of want's type to want's status, reason
// and message, keeping its transition time when it already had that
// status, and reports whether anything changed.
func setCondition(s *corev1.PodStatus, want corev1.PodCondition, now metav1.Time) bool {
	for i := range s.Conditions {
		if c := &s.Conditions[i]; c.Type == want.Type {
			if c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message {
				return false
			}
			if c.Status != want.Status {
				c.LastTransitionTime = now
			}
			c.Status, c.Reason, c.Message = want.Status, want.Reason, want.Message
			return true
		}
	}
	want.LastTransitionTime = now
	s.Conditions = append(s.Conditions, want)
	return true
}

// RunningAndReady reports whether pod is in phase Running with a Ready
// condition True: what the StatefulSet controller waits for under
// OrderedReady.
func RunningAndReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
