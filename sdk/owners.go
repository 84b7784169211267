package sdk

import "github.com/kubeplug/kubeplug/abi"

// ControllerOf returns the owner reference of meta that is marked controller,
// nil if there is none. Kubernetes allows at most one.
func ControllerOf(meta *abi.ObjectMeta) *abi.OwnerReference {
	for i := range meta.OwnerReferences {
		if meta.OwnerReferences[i].Controller {
			return &meta.OwnerReferences[i]
		}
	}
	return nil
}

// HasOwner reports whether meta has an owner reference with uid. Compare by
// UID, not name: a reference to a deleted and recreated owner has the same
// name and a different UID, and is stale.
func HasOwner(meta *abi.ObjectMeta, uid string) bool {
	for i := range meta.OwnerReferences {
		if meta.OwnerReferences[i].UID == uid {
			return true
		}
	}
	return false
}

// NewControllerRef returns a controller owner reference to owner, a
// StatefulSet (apps/v1) or a Pod (v1), with controller and blockOwnerDeletion
// set, as the StatefulSet controller writes them on claims.
//
//	sdk.UpdateOwnerReferences(sdk.RefOf(pvc), nil, sdk.NewControllerRef(pod))
func NewControllerRef[T abi.StatefulSet | abi.Pod](owner *T) abi.OwnerReference {
	ref := RefOf(owner)
	return abi.OwnerReference{
		APIVersion:         abi.KindOf(ref.Kind).APIVersion,
		Kind:               ref.Kind,
		Name:               ref.Name,
		UID:                ref.UID,
		Controller:         true,
		BlockOwnerDeletion: true,
	}
}
