package policy

import "github.com/kubeplug/kubeplug/abi"

// owners is what upstream's per-claim functions read about one replica: the
// retention policy, the two objects that may own its claims, and whether the
// replica is condemned. Each method mirrors the function of the same name in
// kube-controller-manager's pkg/controller/statefulset/stateful_set_utils.go.
//
// set and pod are the controller references upstream would write
// (metav1.NewControllerRef: controller and blockOwnerDeletion set). A replica
// whose pod does not exist yet is judged, as upstream judges it when it
// creates the pod, against a pod of the right name without a UID: every
// reference to that name then looks stale.
type owners struct {
	policy     policy
	set        abi.OwnerReference
	pod        abi.OwnerReference
	scaledDown bool // !podInOrdinalRange
}

// matchesRef reports whether ref names o: same API version, kind and name,
// whatever the UID.
func matchesRef(ref *abi.OwnerReference, o *abi.OwnerReference) bool {
	return ref.APIVersion == o.APIVersion && ref.Kind == o.Kind && ref.Name == o.Name
}

// hasOwnerRef reports whether claim has a reference with uid, controller or
// not. An empty uid (a pod not created yet) matches nothing: the API server
// refuses references without a UID.
func hasOwnerRef(claim *abi.PersistentVolumeClaim, uid string) bool {
	if uid == "" {
		return false
	}
	for i := range claim.Metadata.OwnerReferences {
		if claim.Metadata.OwnerReferences[i].UID == uid {
			return true
		}
	}
	return false
}

// hasStaleOwnerRef reports whether the first reference of claim that names o
// has another UID: it points at an earlier object of the same name, which
// the garbage collector is about to act on.
func hasStaleOwnerRef(claim *abi.PersistentVolumeClaim, o *abi.OwnerReference) bool {
	for i := range claim.Metadata.OwnerReferences {
		if ref := &claim.Metadata.OwnerReferences[i]; matchesRef(ref, o) {
			return ref.UID != o.UID
		}
	}
	return false
}

// hasUnexpectedController reports whether, under a policy other than Retain
// on both, claim has a controller that is neither the set nor the pod, or a
// reference naming the set or the pod with another UID. Such a claim is left
// to whoever owns it: only our own references are removed.
func (o *owners) hasUnexpectedController(claim *abi.PersistentVolumeClaim) bool {
	if o.policy.retainsAll() {
		return false
	}
	_, found := o.unexpectedController(claim)
	return found
}

// unexpectedController returns the reference that makes
// hasUnexpectedController true, ignoring the policy.
func (o *owners) unexpectedController(claim *abi.PersistentVolumeClaim) (abi.OwnerReference, bool) {
	for _, ref := range claim.Metadata.OwnerReferences {
		switch {
		case matchesRef(&ref, &o.set):
			if ref.UID != o.set.UID {
				return ref, true
			}
		case matchesRef(&ref, &o.pod):
			if ref.UID != o.pod.UID {
				return ref, true
			}
		case ref.Controller:
			return ref, true
		}
	}
	return abi.OwnerReference{}, false
}

// hasNonControllerOwner reports whether the set or the pod owns claim through
// a reference that is not a controller reference, as releases before 1.31
// wrote them.
func (o *owners) hasNonControllerOwner(claim *abi.PersistentVolumeClaim) bool {
	for _, ref := range claim.Metadata.OwnerReferences {
		ours := ref.UID == o.set.UID || (o.pod.UID != "" && ref.UID == o.pod.UID)
		if ours && !ref.Controller {
			return true
		}
	}
	return false
}

// isClaimOwnerUpToDate reports whether claim's references already are what
// the policy asks, or must not be touched:
//
//	stale reference to the set or pod  -> leave alone
//	unexpected controller              -> only remove our references, if any
//	our reference without controller   -> rewrite it
//	Retain / Retain                    -> no reference to the set or the pod
//	whenDeleted Delete, whenScaled Retain -> the set only
//	whenDeleted Retain, whenScaled Delete -> the pod only, once condemned
//	Delete / Delete                    -> the set while in range, the pod once condemned
func (o *owners) isClaimOwnerUpToDate(claim *abi.PersistentVolumeClaim) bool {
	if hasStaleOwnerRef(claim, &o.set) || hasStaleOwnerRef(claim, &o.pod) {
		return true
	}
	setRef, podRef := hasOwnerRef(claim, o.set.UID), hasOwnerRef(claim, o.pod.UID)
	if o.hasUnexpectedController(claim) {
		return !setRef && !podRef
	}
	if o.hasNonControllerOwner(claim) {
		return false
	}
	p := o.policy
	switch {
	case !p.known() || p.retainsAll():
		return !setRef && !podRef
	case p.whenScaled == retain && p.whenDeleted == del:
		return setRef && !podRef
	case p.whenScaled == del && p.whenDeleted == retain:
		return !setRef && podRef == o.scaledDown
	default: // Delete on both
		return setRef != o.scaledDown && podRef == o.scaledDown
	}
}

// updateClaimOwnerRefForSetAndPod returns the owner references claim must
// have: every reference naming the set or the pod removed, then, unless
// another controller owns the claim, the controller reference the policy
// asks for. References to anything else are kept, in order. It appends
// them to refs, which it may reuse.
func (o *owners) updateClaimOwnerRefForSetAndPod(claim *abi.PersistentVolumeClaim, refs []abi.OwnerReference) []abi.OwnerReference {
	unexpected := o.hasUnexpectedController(claim)
	for _, ref := range claim.Metadata.OwnerReferences {
		if !matchesRef(&ref, &o.set) && !matchesRef(&ref, &o.pod) {
			refs = append(refs, ref)
		}
	}
	if unexpected {
		return refs
	}
	p := o.policy
	switch {
	case !p.known() || p.retainsAll():
	case p.whenScaled == retain && p.whenDeleted == del:
		refs = addControllerRef(refs, o.set)
	case p.whenScaled == del && p.whenDeleted == retain:
		if o.scaledDown {
			refs = addControllerRef(refs, o.pod)
		}
	default: // Delete on both
		if o.scaledDown {
			refs = addControllerRef(refs, o.pod)
		} else {
			refs = addControllerRef(refs, o.set)
		}
	}
	return refs
}

// addControllerRef appends the controller reference owner unless refs has a
// reference with its UID already.
func addControllerRef(refs []abi.OwnerReference, owner abi.OwnerReference) []abi.OwnerReference {
	for i := range refs {
		if refs[i].UID == owner.UID {
			return refs
		}
	}
	return append(refs, owner)
}
