package sdktest

import (
	"fmt"
	"time"

	"github.com/kubeplug/kubeplug/abi"
)

// Option changes an object a builder makes. Options apply in order; one that
// does not fit the object's kind (Retention on a Pod) panics, naming both.
type Option func(o *object)

// object is what an option works on: the metadata every kind has, and the
// one typed object the builder is making.
type object struct {
	meta  *abi.ObjectMeta
	set   *abi.StatefulSet
	pod   *abi.Pod
	claim *abi.PersistentVolumeClaim
	pv    *abi.PersistentVolume
	kind  string
}

func (o *object) wrong(option string) {
	panic(fmt.Sprintf("sdktest.%s does not apply to a %s", option, o.kind))
}

// Namespace puts the object in ns (builders default to "default").
func Namespace(ns string) Option { return func(o *object) { o.meta.Namespace = ns } }

// UID sets the object's UID (builders default to "<name>-uid").
func UID(uid string) Option { return func(o *object) { o.meta.UID = uid } }

// Labels adds labels, given as key, value pairs.
func Labels(kv ...string) Option {
	return func(o *object) { o.meta.Labels = addPairs(o.meta.Labels, "Labels", kv) }
}

// Annotations adds annotations, given as key, value pairs.
func Annotations(kv ...string) Option {
	return func(o *object) { o.meta.Annotations = addPairs(o.meta.Annotations, "Annotations", kv) }
}

// OwnedBy replaces the object's owner references.
//
//	sdktest.Claim("data", set, 0, sdktest.OwnedBy(sdk.NewControllerRef(set)))
func OwnedBy(refs ...abi.OwnerReference) Option {
	return func(o *object) { o.meta.OwnerReferences = refs }
}

// Finalizers replaces the object's finalizers.
func Finalizers(f ...string) Option { return func(o *object) { o.meta.Finalizers = f } }

// Deleting marks the object as being deleted since at.
func Deleting(at time.Time) Option {
	return func(o *object) { o.meta.DeletionTimestamp = at.UTC().Format(time.RFC3339) }
}

// Retention sets a StatefulSet's persistentVolumeClaimRetentionPolicy; a
// field given as "" is the API default, Retain, as the host fills it in.
//
//	sdktest.StatefulSet("web", 3, sdktest.Retention("Delete", "Retain"))
func Retention(whenDeleted, whenScaled string) Option {
	return func(o *object) {
		if o.set == nil {
			o.wrong("Retention")
		}
		o.set.Spec.PersistentVolumeClaimRetentionPolicy = &abi.StatefulSetPersistentVolumeClaimPolicy{WhenDeleted: whenDeleted, WhenScaled: whenScaled}
	}
}

// Templates replaces a StatefulSet's claim templates with ones named names,
// each a copy of the first template (1Gi, ReadWriteOnce, unless changed).
// With no names the set has no templates.
func Templates(names ...string) Option {
	return func(o *object) {
		if o.set == nil {
			o.wrong("Templates")
		}
		base := defaultTemplate()
		if len(o.set.Spec.VolumeClaimTemplates) > 0 {
			base = o.set.Spec.VolumeClaimTemplates[0]
		}
		ts := make([]abi.PersistentVolumeClaim, len(names))
		for i, n := range names {
			ts[i] = cloneClaim(base)
			ts[i].Metadata.Name = n
		}
		o.set.Spec.VolumeClaimTemplates = ts
	}
}

// OrdinalStart sets a StatefulSet's spec.ordinals.start.
func OrdinalStart(start int32) Option {
	return func(o *object) {
		if o.set == nil {
			o.wrong("OrdinalStart")
		}
		o.set.Spec.Ordinals = &abi.StatefulSetOrdinals{Start: start}
	}
}

// Storage sets the storage size: the request of every template of a
// StatefulSet, the request and capacity of a claim, the capacity of a
// PersistentVolume.
func Storage(size string) Option {
	return func(o *object) {
		switch {
		case o.set != nil:
			for i := range o.set.Spec.VolumeClaimTemplates {
				o.set.Spec.VolumeClaimTemplates[i].Spec.Resources.Requests = map[string]string{"storage": size}
			}
		case o.claim != nil:
			o.claim.Spec.Resources.Requests = map[string]string{"storage": size}
			if o.claim.Status.Phase == "Bound" {
				o.claim.Status.Capacity = map[string]string{"storage": size}
			}
		case o.pv != nil:
			o.pv.Spec.Capacity = map[string]string{"storage": size}
		default:
			o.wrong("Storage")
		}
	}
}

// StorageClassName sets the class of every template of a StatefulSet, of a
// claim, or of a PersistentVolume.
func StorageClassName(name string) Option {
	return func(o *object) {
		switch {
		case o.set != nil:
			for i := range o.set.Spec.VolumeClaimTemplates {
				o.set.Spec.VolumeClaimTemplates[i].Spec.StorageClassName = &name
			}
		case o.claim != nil:
			o.claim.Spec.StorageClassName = &name
		case o.pv != nil:
			o.pv.Spec.StorageClassName = name
		default:
			o.wrong("StorageClassName")
		}
	}
}

// Phase sets the status phase of a pod, claim or PersistentVolume.
func Phase(phase string) Option {
	return func(o *object) {
		switch {
		case o.pod != nil:
			o.pod.Status.Phase = phase
		case o.claim != nil:
			o.claim.Status.Phase = phase
		case o.pv != nil:
			o.pv.Status.Phase = phase
		default:
			o.wrong("Phase")
		}
	}
}

// MinReadySeconds sets a StatefulSet's spec.minReadySeconds.
//
//	sdktest.StatefulSet("web", 3, sdktest.MinReadySeconds(30))
func MinReadySeconds(seconds int32) Option {
	return func(o *object) {
		if o.set == nil {
			o.wrong("MinReadySeconds")
		}
		o.set.Spec.MinReadySeconds = seconds
	}
}

// ReadySince sets a pod's Ready condition: True since at (its
// lastTransitionTime), replacing any Ready condition the pod has.
//
//	sdktest.Pod(set, 0, sdktest.ReadySince(now.Add(-time.Minute)))
func ReadySince(at time.Time) Option {
	return func(o *object) {
		if o.pod == nil {
			o.wrong("ReadySince")
		}
		ready := abi.Condition{Type: "Ready", Status: "True", LastTransitionTime: at.UTC().Format(time.RFC3339)}
		for i := range o.pod.Status.Conditions {
			if o.pod.Status.Conditions[i].Type == "Ready" {
				o.pod.Status.Conditions[i] = ready
				return
			}
		}
		o.pod.Status.Conditions = append(o.pod.Status.Conditions, ready)
	}
}

// CSI makes a PersistentVolume a CSI volume of driver with handle.
func CSI(driver, handle string) Option {
	return func(o *object) {
		if o.pv == nil {
			o.wrong("CSI")
		}
		o.pv.Spec.Source = "csi"
		o.pv.Spec.CSI = &abi.CSIVolumeSource{Driver: driver, VolumeHandle: handle}
	}
}

// ReclaimPolicy sets a PersistentVolume's persistentVolumeReclaimPolicy; ""
// is the API default, Retain, as the host fills it in.
func ReclaimPolicy(policy string) Option {
	return func(o *object) {
		if o.pv == nil {
			o.wrong("ReclaimPolicy")
		}
		o.pv.Spec.PersistentVolumeReclaimPolicy = policy
	}
}

func addPairs(m map[string]string, option string, kv []string) map[string]string {
	if len(kv)%2 != 0 {
		panic(fmt.Sprintf("sdktest.%s needs key, value pairs; got %d strings", option, len(kv)))
	}
	if m == nil {
		m = make(map[string]string, len(kv)/2)
	}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// BoundTo binds a PersistentVolume to claim: claimRef names it (with its
// UID) and the phase is Bound.
func BoundTo(claim *abi.PersistentVolumeClaim) Option {
	return func(o *object) {
		if o.pv == nil {
			o.wrong("BoundTo")
		}
		o.pv.Spec.ClaimRef = &abi.ObjectReference{
			APIVersion: "v1", Kind: abi.KindPersistentVolumeClaim,
			Namespace: claim.Metadata.Namespace, Name: claim.Metadata.Name, UID: claim.Metadata.UID,
		}
		o.pv.Status.Phase = "Bound"
	}
}
