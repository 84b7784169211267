package resizer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// resize grows the bound volume and then reports it on the claim, as
// external-resizer (controller expansion, volume modification) and the
// kubelet (node expansion) together would. Each write carries the
// resourceVersion it was computed from; a conflict rereads the object and
// computes again.
func (r *Resizer) resize(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	key := claim.Namespace + "/" + claim.Name
	var grown *resource.Quantity
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := r.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.UID != claim.UID || c.Spec.VolumeName == "" {
			return nil // replaced or unbound meanwhile: the informer brings it
		}
		w, err := r.wanted(ctx, c)
		if err != nil || w == nil {
			return err
		}
		size := c.Status.Capacity[corev1.ResourceStorage]
		if w.grow {
			size = c.Spec.Resources.Requests[corev1.ResourceStorage]
		}
		if err := r.updateVolume(ctx, c.Spec.VolumeName, size, c.Spec.VolumeAttributesClassName); err != nil {
			return err
		}
		c = c.DeepCopy()
		if w.grow {
			c.Status.Capacity = setStorage(c.Status.Capacity, size)
			c.Status.AllocatedResources = setStorage(c.Status.AllocatedResources, size)
			delete(c.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
			if len(c.Status.AllocatedResourceStatuses) == 0 {
				c.Status.AllocatedResourceStatuses = nil
			}
			c.Status.Conditions = dropConditions(c.Status.Conditions, corev1.PersistentVolumeClaimResizing,
				corev1.PersistentVolumeClaimFileSystemResizePending, corev1.PersistentVolumeClaimControllerResizeError,
				corev1.PersistentVolumeClaimNodeResizeError)
		}
		if w.modify {
			vac := *c.Spec.VolumeAttributesClassName
			c.Status.CurrentVolumeAttributesClassName = &vac
			c.Status.ModifyVolumeStatus = nil
			c.Status.Conditions = dropConditions(c.Status.Conditions, corev1.PersistentVolumeClaimVolumeModifyingVolume,
				corev1.PersistentVolumeClaimVolumeModifyVolumeError)
		}
		if _, err := r.client.CoreV1().PersistentVolumeClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if w.grow {
			grown = &size
		}
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("resize claim %s: %w", key, err)
	}
	r.done(key)
	if grown != nil {
		r.mu.Lock()
		r.resized = append(r.resized, key+"="+grown.String())
		r.mu.Unlock()
	}
	return nil
}

// updateVolume sets the PersistentVolume's capacity (never lowering it) and
// volumeAttributesClassName.
func (r *Resizer) updateVolume(ctx context.Context, name string, size resource.Quantity, vac *string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pv, err := r.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("volume %s: %w", name, err)
		}
		changed := false
		if cur, ok := pv.Spec.Capacity[corev1.ResourceStorage]; !ok || size.Cmp(cur) > 0 {
			pv.Spec.Capacity = setStorage(pv.Spec.Capacity, size)
			changed = true
		}
		if vac != nil && *vac != "" && (pv.Spec.VolumeAttributesClassName == nil || *pv.Spec.VolumeAttributesClassName != *vac) {
			v := *vac
			pv.Spec.VolumeAttributesClassName = &v
			changed = true
		}
		if !changed {
			return nil
		}
		_, err = r.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
		return err
	})
}

// failExpansion reports the claim's expansion infeasible, as
// external-resizer does when the driver answers InvalidArgument or
// OutOfRange: the request is recorded as allocated, its status
// ControllerResizeInfeasible, condition ControllerResizeError True, and a
// Warning event. The volume is not touched.
func (r *Resizer) failExpansion(ctx context.Context, claim *corev1.PersistentVolumeClaim, msg string) error {
	key := claim.Namespace + "/" + claim.Name
	var req resource.Quantity
	var failed *corev1.PersistentVolumeClaim
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := r.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.UID != claim.UID {
			return nil
		}
		c = c.DeepCopy()
		req = c.Spec.Resources.Requests[corev1.ResourceStorage]
		c.Status.AllocatedResources = setStorage(c.Status.AllocatedResources, req)
		if c.Status.AllocatedResourceStatuses == nil {
			c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{}
		}
		c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = corev1.PersistentVolumeClaimControllerResizeInfeasible
		now := metav1.Now()
		c.Status.Conditions = append(dropConditions(c.Status.Conditions, corev1.PersistentVolumeClaimResizing, corev1.PersistentVolumeClaimControllerResizeError),
			corev1.PersistentVolumeClaimCondition{
				Type: corev1.PersistentVolumeClaimControllerResizeError, Status: corev1.ConditionTrue,
				LastProbeTime: now, LastTransitionTime: now,
				Message: msg,
			})
		failed, err = r.client.CoreV1().PersistentVolumeClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fail expansion of claim %s: %w", key, err)
	}
	r.mu.Lock()
	delete(r.fail, key)
	delete(r.due, key)
	r.failed[key] = req.String()
	r.mu.Unlock()
	if failed == nil {
		return nil
	}
	return r.event(ctx, failed, corev1.EventTypeWarning, ReasonResizeFailed, "resize volume \""+failed.Spec.VolumeName+"\" by resizer \""+Driver+"\" failed: "+msg)
}

// event records an event on the claim, as external-resizer's recorder does.
func (r *Resizer) event(ctx context.Context, c *corev1.PersistentVolumeClaim, typ, reason, msg string) error {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: c.Name + ".", Namespace: c.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name,
			UID: c.UID, ResourceVersion: c.ResourceVersion,
		},
		Reason: reason, Message: msg, Type: typ,
		Source:         corev1.EventSource{Component: "external-resizer " + Driver},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "external-resizer " + Driver,
	}
	if _, err := r.client.CoreV1().Events(c.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("event %s on claim %s/%s: %w", reason, c.Namespace, c.Name, err)
	}
	return nil
}

// provision creates a volume of the size the Pending claim requests and
// binds the two, as external-provisioner and the binder would: the volume
// pre-bound to the claim's UID, then the claim's spec.volumeName, then both
// statuses Bound.
func (r *Resizer) provision(ctx context.Context, c *corev1.PersistentVolumeClaim) error {
	key := c.Namespace + "/" + c.Name
	size := c.Spec.Resources.Requests[corev1.ResourceStorage]
	class := ""
	if c.Spec.StorageClassName != nil {
		class = *c.Spec.StorageClassName
	}
	name, handle := "pvc-"+string(c.UID), string(c.UID)
	if r.o.CreateVolume != nil {
		var err error
		if handle, err = r.o.CreateVolume(ctx, name, size.Value()); err != nil {
			return fmt.Errorf("provision claim %s: create volume %s: %w", key, name, err)
		}
		r.mu.Lock()
		r.unsaved[key] = unsavedVolume{uid: c.UID, pv: name, handle: handle}
		r.mu.Unlock()
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": Driver},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   c.Spec.AccessModes,
			VolumeMode:                    c.Spec.VolumeMode,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              class,
			VolumeAttributesClassName:     c.Spec.VolumeAttributesClassName,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: c.Namespace, Name: c.Name, UID: c.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: Driver, VolumeHandle: handle,
			}},
		},
	}
	if r.o.Protect {
		pv.Finalizers = []string{ProvisionerFinalizer}
	}
	created, err := r.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = r.client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("provision claim %s: %w", key, err)
	}
	r.saved(key, c.UID)
	if created.Status.Phase != corev1.VolumeBound {
		created.Status.Phase = corev1.VolumeBound
		if _, err := r.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("provision claim %s: volume %s bound: %w", key, pv.Name, err)
		}
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := r.client.CoreV1().PersistentVolumeClaims(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != c.UID {
			return nil
		}
		if cur.Spec.VolumeName == "" {
			cur = cur.DeepCopy()
			cur.Spec.VolumeName = pv.Name
			if cur.Annotations == nil {
				cur.Annotations = map[string]string{}
			}
			cur.Annotations["pv.kubernetes.io/bind-completed"] = "yes"
			cur.Annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
			if cur, err = r.client.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		if cur.Spec.VolumeName != pv.Name || cur.Status.Phase == corev1.ClaimBound {
			return nil
		}
		cur = cur.DeepCopy()
		cur.Status.Phase = corev1.ClaimBound
		cur.Status.AccessModes = pv.Spec.AccessModes
		cur.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: size}
		cur.Status.CurrentVolumeAttributesClassName = c.Spec.VolumeAttributesClassName
		_, err = r.client.CoreV1().PersistentVolumeClaims(c.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("provision claim %s: bind to %s: %w", key, pv.Name, err)
	}
	return nil
}

func setStorage(l corev1.ResourceList, q resource.Quantity) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range l {
		out[k] = v
	}
	out[corev1.ResourceStorage] = q
	return out
}

func dropConditions(cs []corev1.PersistentVolumeClaimCondition, types ...corev1.PersistentVolumeClaimConditionType) []corev1.PersistentVolumeClaimCondition {
	var out []corev1.PersistentVolumeClaimCondition
next:
	for _, c := range cs {
		for _, t := range types {
			if c.Type == t {
				continue next
			}
		}
		out = append(out, c)
	}
	return out
}
