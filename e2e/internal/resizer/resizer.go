package resizer

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Driver is the CSI driver of the volumes Provision makes and the name the
// stand-in's events come from.
const Driver = "resizer.kubeplug.dev"

// ReasonResizeFailed is the reason of the Warning event on a claim whose
// expansion failed, as external-resizer spells it.
const ReasonResizeFailed = "VolumeResizeFailed"

// workers sync claims concurrently.
const workers = 2

// Options say which claims the stand-in serves and how slowly.
type Options struct {
	// Namespace is the namespace whose claims it serves; "" serves all.
	Namespace string
	// Delay is how long after a claim asks for a change the change is
	// made. Zero: at once.
	Delay time.Duration
	// Provision makes it bind Pending claims to volumes it creates, as
	// external-provisioner and kube-controller-manager's binder would.
	// Leave it false when something else provisions.
	Provision bool
	// CreateVolume, when set, makes the backing volume of a volume
	// Provision creates, as external-provisioner's CreateVolume call to
	// the driver does: name is the PersistentVolume's name (the same for a
	// retry, which the driver must answer with the same volume), and the
	// id it returns is the volume's handle. Unset: the handle is the
	// claim's UID and nothing backs it.
	CreateVolume func(ctx context.Context, name string, bytes int64) (handle string, err error)
	// DeleteVolume, when set with CreateVolume, deletes a backing volume
	// made for a claim whose PersistentVolume could not be saved before the
	// claim went away (deleted, or replaced by another of its name), as
	// external-provisioner deletes a volume it cannot store a
	// PersistentVolume for. Unset: such a volume stays in the driver.
	DeleteVolume func(ctx context.Context, handle string) error
	// Protect makes Provision create each PersistentVolume with
	// external-provisioner's finalizer, as external-provisioner does when
	// HonorPVReclaimPolicy is on (the default since Kubernetes 1.31,
	// KEP-2644): the volume's deletion then waits for whoever deletes the
	// backing volume. Unset: the PV is created bare, as by a provisioner
	// without the feature, and the reclaim module adds the finalizer once
	// it sees the PV bound.
	Protect bool
}

// ProvisionerFinalizer is external-provisioner's finalizer on the
// PersistentVolumes it provisions (KEP-2644).
const ProvisionerFinalizer = "external-provisioner.volume.kubernetes.io/finalizer"

// Resizer is a running stand-in. Only keys are queued; each sync reads the
// claim from the informer's cache, and rereads it from the API server only
// to retry a write that conflicted.
type Resizer struct {
	o      Options
	client kubernetes.Interface
	claims corelisters.PersistentVolumeClaimLister
	queue  workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// due is when a claim's change in wait may be made.
	due map[string]time.Time
	// fail holds the message of the next expansion of a claim to fail.
	fail map[string]string
	// failed is the request whose expansion failed, per claim: not tried
	// again until the request changes.
	failed  map[string]string
	resized []string
	// unsaved is, per claim, the backing volume made for it whose
	// PersistentVolume has not been saved yet.
	unsaved map[string]unsavedVolume
}

// unsavedVolume is a backing volume made for the claim of UID uid, to be
// the volume of PersistentVolume pv.
type unsavedVolume struct {
	uid        types.UID
	pv, handle string
}

// Start watches claims in o.Namespace ("" all) and, o.Delay after a bound
// claim's spec asks for more storage than status.capacity or for a
// volumeAttributesClassName its status does not have, updates the bound
// PV's spec.capacity and the claim's status (capacity,
// currentVolumeAttributesClassName, allocatedResources), as external-resizer
// plus kubelet's node expansion would. It returns once its cache has synced
// (or ctx ended); the end of ctx stops it.
func Start(ctx context.Context, client kubernetes.Interface, o Options) *Resizer {
	r := &Resizer{
		o:      o,
		client: client,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resizer"},
		),
		due:     map[string]time.Time{},
		fail:    map[string]string{},
		failed:  map[string]string{},
		unsaved: map[string]unsavedVolume{},
	}
	var opts []informers.SharedInformerOption
	if o.Namespace != "" {
		opts = append(opts, informers.WithNamespace(o.Namespace))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	inf := factory.Core().V1().PersistentVolumeClaims()
	r.claims = inf.Lister()
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.enqueue,
		UpdateFunc: func(_, obj any) { r.enqueue(obj) },
		DeleteFunc: r.enqueue,
	}); err != nil {
		// Only a stopped informer refuses a handler: it was just made.
		panic(fmt.Sprintf("resizer: watch claims: %v", err))
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, r.runWorker, time.Second) })
	}
	go func() {
		<-ctx.Done()
		r.queue.ShutDown()
		wg.Wait()
		factory.Shutdown()
	}()
	return r
}

// Fail makes the expansion of claim namespace/name fail as external-resizer
// reports an infeasible one: allocatedResourceStatuses.storage =
// ControllerResizeInfeasible, condition ControllerResizeError True with
// message, Warning event VolumeResizeFailed on the claim. It applies to the
// expansion in wait, or else to the claim's next one, once.
func (r *Resizer) Fail(namespace, name, message string) {
	key := namespace + "/" + name
	r.mu.Lock()
	r.fail[key] = message
	r.mu.Unlock()
	r.queue.Add(key)
}

// Resized lists the expansions made, as "namespace/name=size" (the new
// status.capacity.storage), in the order they completed. A change of
// volumeAttributesClassName alone is not an expansion and is not listed.
func (r *Resizer) Resized() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.resized...)
}

func (r *Resizer) enqueue(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		r.queue.Add(c.Namespace + "/" + c.Name)
	}
}

func (r *Resizer) runWorker(ctx context.Context) {
	for r.processNextWorkItem(ctx) {
	}
}

func (r *Resizer) processNextWorkItem(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if err := r.sync(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "resizer stand-in: sync claim", "claim", key)
		r.queue.AddRateLimited(key)
		return true
	}
	r.queue.Forget(key)
	return true
}

// sync does what the claim of key waits for, once its delay has passed.
func (r *Resizer) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	claim, err := r.claims.PersistentVolumeClaims(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := r.reapUnsaved(ctx, key, claim); err != nil {
		return err
	}
	if claim == nil {
		r.forget(key)
		return nil
	}
	if claim.DeletionTimestamp != nil {
		return nil
	}
	if claim.Spec.VolumeName == "" {
		if !r.o.Provision || claim.Status.Phase == corev1.ClaimBound {
			return nil
		}
		// Provisioning does not wait: Delay is the time an expansion
		// takes.
		return r.provision(ctx, claim)
	}
	w, err := r.wanted(ctx, claim)
	if err != nil || w == nil {
		return err
	}
	if !r.waited(key) {
		return nil
	}
	r.mu.Lock()
	msg, failing := r.fail[key]
	r.mu.Unlock()
	if failing && w.grow {
		return r.failExpansion(ctx, claim, msg)
	}
	return r.resize(ctx, claim)
}

// waited reports whether the claim of key has waited its delay since it was
// first found waiting; if not, it queues the key again for when it will
// have.
func (r *Resizer) waited(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	due, ok := r.due[key]
	if !ok {
		due = time.Now().Add(r.o.Delay)
		r.due[key] = due
	}
	if left := time.Until(due); left > 0 {
		r.queue.AddAfter(key, left)
		return false
	}
	return true
}

// done ends the claim's wait: its next change waits Delay again.
func (r *Resizer) done(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.due, key)
}

func (r *Resizer) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.due, key)
	delete(r.failed, key)
}

// reapUnsaved deletes the backing volume made for the claim of key whose
// PersistentVolume was never saved, once that claim is gone or being
// deleted (claim is the cache's claim of that name, nil if none): nothing
// else knows the volume exists. A PersistentVolume that was saved after all
// (its create answered with an error after it took effect) keeps the
// volume: it is the volume's record, and its reclaim policy decides.
func (r *Resizer) reapUnsaved(ctx context.Context, key string, claim *corev1.PersistentVolumeClaim) error {
	r.mu.Lock()
	v, ok := r.unsaved[key]
	r.mu.Unlock()
	if !ok || claim != nil && claim.UID == v.uid && claim.DeletionTimestamp == nil {
		return nil
	}
	_, err := r.client.CoreV1().PersistentVolumes().Get(ctx, v.pv, metav1.GetOptions{})
	switch {
	case err == nil:
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("claim %s gone: read volume %s: %w", key, v.pv, err)
	case r.o.DeleteVolume != nil:
		if err := r.o.DeleteVolume(ctx, v.handle); err != nil {
			return fmt.Errorf("claim %s gone before its volume %s was saved: delete backing volume %s: %w", key, v.pv, v.handle, err)
		}
	}
	r.saved(key, v.uid)
	return nil
}

// saved forgets the unsaved volume of the claim of key and UID uid.
func (r *Resizer) saved(key string, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unsaved[key].uid == uid {
		delete(r.unsaved, key)
	}
}

// want is what a bound claim waits for.
type want struct {
	grow, modify bool
}

// wanted reports what the bound claim asks that its status does not have,
// nil when nothing (or nothing the stand-in may do: an expansion the
// StorageClass does not allow, or one that failed and whose request has not
// changed since).
func (r *Resizer) wanted(ctx context.Context, c *corev1.PersistentVolumeClaim) (*want, error) {
	if c.Status.Phase != corev1.ClaimBound {
		return nil, nil
	}
	key := c.Namespace + "/" + c.Name
	var w want
	req, hasReq := c.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity, hasCap := c.Status.Capacity[corev1.ResourceStorage]
	if hasReq && hasCap && req.Cmp(capacity) > 0 {
		r.mu.Lock()
		failedAt, failed := r.failed[key]
		r.mu.Unlock()
		allowed, err := r.expansionAllowed(ctx, c)
		if err != nil {
			return nil, err
		}
		w.grow = allowed && (!failed || failedAt != req.String())
	}
	if vac := c.Spec.VolumeAttributesClassName; vac != nil && *vac != "" &&
		(c.Status.CurrentVolumeAttributesClassName == nil || *c.Status.CurrentVolumeAttributesClassName != *vac) {
		w.modify = true
	}
	if !w.grow && !w.modify {
		return nil, nil
	}
	return &w, nil
}

// expansionAllowed reports whether the claim's StorageClass has
// allowVolumeExpansion: true. A claim of no class or of a class that does
// not exist cannot be expanded.
func (r *Resizer) expansionAllowed(ctx context.Context, c *corev1.PersistentVolumeClaim) (bool, error) {
	if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName == "" {
		return false, nil
	}
	sc, err := r.client.StorageV1().StorageClasses().Get(ctx, *c.Spec.StorageClassName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("storage class of claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	return sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion, nil
}
