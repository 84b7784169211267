package actions

import "github.com/kubeplug/kubeplug/abi"

// Target is the object of the reconcile input an action is about, as the
// module saw it. Writes on it carry UID and ResourceVersion as preconditions.
type Target struct {
	Kind            string
	Namespace       string
	Name            string
	UID             string
	ResourceVersion string
	// OwnerReferences and Finalizers are the object's lists as the module
	// saw them; updateOwnerReferences and add/removeFinalizer compute the
	// new list from them.
	OwnerReferences []abi.OwnerReference
	Finalizers      []string
	// Deleting is true when the object has a deletionTimestamp.
	Deleting bool
	// Object is the input's projection of the object: one of
	// *abi.StatefulSet, *abi.Pod, *abi.PersistentVolumeClaim,
	// *abi.PersistentVolume, *abi.StorageClass, *abi.VolumeClaimUpdate.
	Object any
}

// Ref returns the reference naming t.
func (t Target) Ref() abi.ObjectRef {
	return abi.ObjectRef{Kind: t.Kind, Namespace: t.Namespace, Name: t.Name, UID: t.UID}
}

// String returns "Kind namespace/name", or "Kind name" when cluster-scoped.
func (t Target) String() string { return refString(t.Ref()) }

func refString(r abi.ObjectRef) string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// eachObject calls f for every object of req with its kind and metadata,
// until f returns false.
func eachObject(req *abi.ReconcileRequest, f func(kind string, m *abi.ObjectMeta, obj any) bool) {
	if req == nil {
		return
	}
	if s := req.StatefulSet; s != nil {
		if s.Set != nil && !f(abi.KindStatefulSet, &s.Set.Metadata, s.Set) {
			return
		}
		for i := range s.Pods {
			if !f(abi.KindPod, &s.Pods[i].Metadata, &s.Pods[i]) {
				return
			}
		}
		for i := range s.Claims {
			if !f(abi.KindPersistentVolumeClaim, &s.Claims[i].Metadata, &s.Claims[i]) {
				return
			}
		}
		for i := range s.StorageClasses {
			if !f(abi.KindStorageClass, &s.StorageClasses[i].Metadata, &s.StorageClasses[i]) {
				return
			}
		}
		if s.ClaimUpdate != nil && !f(abi.KindVolumeClaimUpdate, &s.ClaimUpdate.Metadata, s.ClaimUpdate) {
			return
		}
		for i := range s.OtherClaimUpdates {
			if !f(abi.KindVolumeClaimUpdate, &s.OtherClaimUpdates[i].Metadata, &s.OtherClaimUpdates[i]) {
				return
			}
		}
	}
	if s := req.PersistentVolume; s != nil {
		if s.Volume != nil && !f(abi.KindPersistentVolume, &s.Volume.Metadata, s.Volume) {
			return
		}
		if s.Claim != nil && !f(abi.KindPersistentVolumeClaim, &s.Claim.Metadata, s.Claim) {
			return
		}
		if s.StorageClass != nil && !f(abi.KindStorageClass, &s.StorageClass.Metadata, s.StorageClass) {
			return
		}
	}
}

// resolve finds the object of req that ref names exactly (kind, namespace,
// name and UID).
func resolve(req *abi.ReconcileRequest, ref abi.ObjectRef) (Target, bool) {
	var t Target
	found := false
	if ref.UID == "" {
		return t, false
	}
	eachObject(req, func(kind string, m *abi.ObjectMeta, obj any) bool {
		if kind != ref.Kind || m.Namespace != ref.Namespace || m.Name != ref.Name || m.UID != ref.UID {
			return true
		}
		t = Target{
			Kind:            kind,
			Namespace:       m.Namespace,
			Name:            m.Name,
			UID:             m.UID,
			ResourceVersion: m.ResourceVersion,
			OwnerReferences: m.OwnerReferences,
			Finalizers:      m.Finalizers,
			Deleting:        m.DeletionTimestamp != "",
			Object:          obj,
		}
		found = true
		return false
	})
	return t, found
}

// subjectRef names the subject of req, where refusals are reported.
func subjectRef(req *abi.ReconcileRequest) (abi.ObjectRef, bool) {
	kind, m, ok := req.SubjectObject()
	if !ok {
		return abi.ObjectRef{}, false
	}
	return abi.ObjectRef{Kind: kind, Namespace: m.Namespace, Name: m.Name, UID: m.UID}, true
}
