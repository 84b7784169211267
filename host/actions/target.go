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
	// *abi.PersistentVolume, *abi.StorageClass, *abi.VolumeClaimUpdate,
	// or a declared module's *abi.GenericObject; nil for an object to
	// create.
	Object any
	// Body is the object an apply, applyStatus or create carries, as
	// Validate decoded and checked it, for the executor to write without
	// decoding it again.
	Body map[string]any
}

// Ref returns the reference naming t.
func (t Target) Ref() abi.ObjectRef {
	return abi.ObjectRef{Kind: t.Kind, Namespace: t.Namespace, Name: t.Name, UID: t.UID}
}

// String returns "Kind namespace/name", or "Kind name" when cluster-scoped.
func (t Target) String() string { return RefString(t.Ref()) }

// RefString returns "Kind namespace/name", or "Kind name" for a
// cluster-scoped object: how the host names an object in its messages.
func RefString(r abi.ObjectRef) string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// resolve finds the object of req that ref names exactly (kind, namespace,
// name and UID).
func resolve(req *abi.ReconcileRequest, ref abi.ObjectRef) (Target, bool) {
	if ref.UID == "" {
		return Target{}, false
	}
	for o := range req.Objects() {
		m := o.Meta
		if o.Kind != ref.Kind || m.Namespace != ref.Namespace || m.Name != ref.Name || m.UID != ref.UID {
			continue
		}
		return Target{
			Kind:            o.Kind,
			Namespace:       m.Namespace,
			Name:            m.Name,
			UID:             m.UID,
			ResourceVersion: m.ResourceVersion,
			OwnerReferences: m.OwnerReferences,
			Finalizers:      m.Finalizers,
			Deleting:        m.DeletionTimestamp != "",
			Object:          o.Value,
		}, true
	}
	return Target{}, false
}

// subjectRef names the subject of req, where refusals are reported.
func subjectRef(req *abi.ReconcileRequest) (abi.ObjectRef, bool) {
	kind, m, ok := req.SubjectObject()
	if !ok {
		return abi.ObjectRef{}, false
	}
	return abi.ObjectRef{Kind: kind, Namespace: m.Namespace, Name: m.Name, UID: m.UID}, true
}
