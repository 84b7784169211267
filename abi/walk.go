package abi

import "iter"

//msgp:ignore Object

// Object is one object of a request as Objects yields it: its kind (one of
// Kinds(), or a declared resource's), its metadata, and the object itself (a
// *StatefulSet, *Pod, ..., a *GenericObject of a declared module's request).
type Object struct {
	Kind string
	Meta *ObjectMeta
	// Value is the object: a pointer into the request, as its field holds
	// it.
	Value any
}

// Objects yields every object of r, the subject first, then its related
// objects in the order the request lists them. It is the one walk over a
// request's objects: the host's executor finds an action's target with it,
// record writes a case's objects with it, and a new subject's objects are
// added here, once, not in every package that reads a request.
func (r *ReconcileRequest) Objects() iter.Seq[Object] {
	return func(yield func(Object) bool) {
		if r == nil {
			return
		}
		if s := r.StatefulSet; s != nil {
			if s.Set != nil && !yield(Object{KindStatefulSet, &s.Set.Metadata, s.Set}) {
				return
			}
			for i := range s.Pods {
				if !yield(Object{KindPod, &s.Pods[i].Metadata, &s.Pods[i]}) {
					return
				}
			}
			for i := range s.Claims {
				if !yield(Object{KindPersistentVolumeClaim, &s.Claims[i].Metadata, &s.Claims[i]}) {
					return
				}
			}
			for i := range s.StorageClasses {
				if !yield(Object{KindStorageClass, &s.StorageClasses[i].Metadata, &s.StorageClasses[i]}) {
					return
				}
			}
			if s.ClaimUpdate != nil && !yield(Object{KindVolumeClaimUpdate, &s.ClaimUpdate.Metadata, s.ClaimUpdate}) {
				return
			}
			for i := range s.OtherClaimUpdates {
				if !yield(Object{KindVolumeClaimUpdate, &s.OtherClaimUpdates[i].Metadata, &s.OtherClaimUpdates[i]}) {
					return
				}
			}
		}
		if s := r.PersistentVolume; s != nil {
			if s.Volume != nil && !yield(Object{KindPersistentVolume, &s.Volume.Metadata, s.Volume}) {
				return
			}
			if s.Claim != nil && !yield(Object{KindPersistentVolumeClaim, &s.Claim.Metadata, s.Claim}) {
				return
			}
			if s.StorageClass != nil && !yield(Object{KindStorageClass, &s.StorageClass.Metadata, s.StorageClass}) {
				return
			}
		}
		if s := r.Declared; s != nil {
			if o := s.Object; o != nil && !yield(Object{o.Kind, &o.Metadata, o}) {
				return
			}
			for i := range s.Related {
				for j := range s.Related[i].Objects {
					o := &s.Related[i].Objects[j]
					if !yield(Object{o.Kind, &o.Metadata, o}) {
						return
					}
				}
			}
		}
	}
}
