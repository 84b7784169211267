package abi

//msgp:tag json
//msgp:clearomitted

// ReconcileRequest is the input of the reconcile hook: one subject's current
// state, read from the host's caches, and everything else a decision needs.
// Exactly one of StatefulSet, PersistentVolume and Declared is set,
// matching Subject (Declared for a module that declares Watches).
type ReconcileRequest struct {
	// Subject is the manifest's subject kind.
	Subject string `json:"subject"`
	// Key is "namespace/name" (or "name" for cluster-scoped subjects).
	Key string `json:"key"`
	// Now is the host's clock, RFC 3339 with nanoseconds, UTC.
	Now string `json:"now"`
	// Config is the module's configuration as JSON, empty if none.
	Config []byte `json:"config,omitempty"`

	StatefulSet      *StatefulSetSubject      `json:"statefulSet,omitempty"`
	PersistentVolume *PersistentVolumeSubject `json:"persistentVolume,omitempty"`
	// Declared is set, in place of the above, for a module that declares
	// Watches (ABI 1.6).
	Declared *DeclaredSubject `json:"declared,omitempty"`
}

// SubjectObject returns the kind and metadata of r's subject object: the
// one place that pairs a subject field of ReconcileRequest with its object.
// ok is false when r holds none.
func (r *ReconcileRequest) SubjectObject() (kind string, meta *ObjectMeta, ok bool) {
	switch {
	case r == nil:
	case r.StatefulSet != nil && r.StatefulSet.Set != nil:
		return KindStatefulSet, &r.StatefulSet.Set.Metadata, true
	case r.PersistentVolume != nil && r.PersistentVolume.Volume != nil:
		return KindPersistentVolume, &r.PersistentVolume.Volume.Metadata, true
	case r.Declared != nil && r.Declared.Object != nil:
		return r.Declared.Object.Kind, &r.Declared.Object.Metadata, true
	}
	return "", nil, false
}

// StatefulSetSubject is the state for SubjectStatefulSet. Set is always set:
// the host does not reconcile a StatefulSet that no longer exists.
type StatefulSetSubject struct {
	Set *StatefulSet `json:"set,omitempty"`
	// Pods are the pods whose controller reference is the set.
	Pods []Pod `json:"pods,omitempty"`
	// Claims are the claims named <template>-<set>-<ordinal> for the set's
	// templates, for any ordinal (condemned replicas included), whatever their
	// owner references say, sorted by ordinal, then template.
	Claims []PersistentVolumeClaim `json:"claims,omitempty"`
	// StorageClasses are the classes the templates and claims name.
	StorageClasses []StorageClass `json:"storageClasses,omitempty"`
	// ClaimUpdate is the VolumeClaimUpdate in effect for the set, if any:
	// of those whose spec.statefulSetName names it, the oldest (by
	// creationTimestamp, then name), so that a VolumeClaimUpdate created
	// later never takes over from one already in effect.
	ClaimUpdate *VolumeClaimUpdate `json:"claimUpdate,omitempty"`
	// OtherClaimUpdates are the other VolumeClaimUpdates naming the set, in
	// the same order, none of them in effect (ABI 1.4): a module can tell
	// them so.
	OtherClaimUpdates []VolumeClaimUpdate `json:"otherClaimUpdates,omitempty"`
}

// PersistentVolumeSubject is the state for SubjectPersistentVolume. Volume
// is always set: the host does not reconcile a volume that no longer exists.
type PersistentVolumeSubject struct {
	Volume *PersistentVolume `json:"volume,omitempty"`
	// Claim is the claim the volume's claimRef names, when it exists and
	// its UID matches claimRef.uid; nil otherwise.
	Claim *PersistentVolumeClaim `json:"claim,omitempty"`
	// StorageClass is the volume's class, if it exists.
	StorageClass *StorageClass `json:"storageClass,omitempty"`
	// Drivers are the CSI drivers the host is configured to act for.
	Drivers []string `json:"drivers,omitempty"`
}
