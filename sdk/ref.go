package sdk

import "github.com/kubeplug/kubeplug/abi"

// Object is the set of object types a reconcile input holds.
type Object interface {
	abi.StatefulSet | abi.Pod | abi.PersistentVolumeClaim | abi.PersistentVolume | abi.StorageClass | abi.VolumeClaimUpdate
}

// RefOf returns the action target naming obj: its kind, namespace, name and
// UID.
//
//	sdk.DeleteObject(sdk.RefOf(pvc))
func RefOf[T Object](obj *T) abi.ObjectRef {
	var kind string
	var meta *abi.ObjectMeta
	switch o := any(obj).(type) {
	case *abi.StatefulSet:
		kind, meta = abi.KindStatefulSet, &o.Metadata
	case *abi.Pod:
		kind, meta = abi.KindPod, &o.Metadata
	case *abi.PersistentVolumeClaim:
		kind, meta = abi.KindPersistentVolumeClaim, &o.Metadata
	case *abi.PersistentVolume:
		kind, meta = abi.KindPersistentVolume, &o.Metadata
	case *abi.StorageClass:
		kind, meta = abi.KindStorageClass, &o.Metadata
	case *abi.VolumeClaimUpdate:
		kind, meta = abi.KindVolumeClaimUpdate, &o.Metadata
	}
	return abi.ObjectRef{Kind: kind, Namespace: meta.Namespace, Name: meta.Name, UID: meta.UID}
}
