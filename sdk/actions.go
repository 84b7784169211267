package sdk

import "github.com/kubeplug/kubeplug/abi"

// Constructors for every action type of the ABI. Each takes the target as an
// abi.ObjectRef, usually made with RefOf from an object of the request; the
// host refuses targets that are not.

// UpdateOwnerReferences drops the target's owner references whose UID is in
// remove, then adds add, replacing references with the same UID.
//
//	sdk.UpdateOwnerReferences(sdk.RefOf(claim), nil, sdk.NewControllerRef(set))
//
// The action holds a copy of add, not add itself. The change and one added
// reference, the usual case, take one allocation between them, and the
// caller's add does not escape: in a guest every allocation is a trip
// through Go's allocator, and a module may make an action per claim.
func UpdateOwnerReferences(target abi.ObjectRef, remove []string, add ...abi.OwnerReference) abi.Action {
	c := &ownerChange{change: abi.OwnerReferencesChange{Remove: remove}}
	switch len(add) {
	case 0:
	case 1:
		c.one[0] = add[0]
		c.change.Add = c.one[:]
	default:
		c.change.Add = append([]abi.OwnerReference(nil), add...)
	}
	return abi.Action{
		Type:            abi.ActionUpdateOwnerReferences,
		Target:          target,
		OwnerReferences: &c.change,
	}
}

// ownerChange is an owner-reference change with room for one added
// reference (UpdateOwnerReferences).
type ownerChange struct {
	change abi.OwnerReferencesChange
	one    [1]abi.OwnerReference
}

// AddFinalizer adds finalizer to the target if it lacks it.
func AddFinalizer(target abi.ObjectRef, finalizer string) abi.Action {
	return abi.Action{Type: abi.ActionAddFinalizer, Target: target, Finalizer: finalizer}
}

// RemoveFinalizer removes finalizer from the target if it has it.
func RemoveFinalizer(target abi.ObjectRef, finalizer string) abi.Action {
	return abi.Action{Type: abi.ActionRemoveFinalizer, Target: target, Finalizer: finalizer}
}

// DeleteObject deletes the target.
func DeleteObject(target abi.ObjectRef) abi.Action {
	return abi.Action{Type: abi.ActionDeleteObject, Target: target}
}

// ApplyClaim server-side applies the set fields of claim to the target claim
// with kubeplug's field manager.
//
//	sdk.ApplyClaim(sdk.RefOf(pvc), abi.ClaimApply{Resources: &abi.ResourceRequirements{Requests: map[string]string{"storage": "20Gi"}}})
func ApplyClaim(target abi.ObjectRef, claim abi.ClaimApply) abi.Action {
	return abi.Action{Type: abi.ActionApplyClaim, Target: target, Claim: &claim}
}

// SetPartition sets the target StatefulSet's rollingUpdate.partition, and
// removes a hold's record (abi.PartitionHold) if the set has one.
func SetPartition(target abi.ObjectRef, partition int32) abi.Action {
	return abi.Action{Type: abi.ActionSetPartition, Target: target, Partition: &partition}
}

// HoldPartition sets the target StatefulSet's rollingUpdate.partition and
// records on the set, in the same write, that the module holds it there and
// that the user's own partition is user (nil: none): see abi.PartitionHold
// and PartitionHoldOf.
func HoldPartition(target abi.ObjectRef, partition int32, user *int32) abi.Action {
	hold := &abi.PartitionHold{}
	if user != nil {
		u := *user
		hold.UserPartition = &u
	}
	return abi.Action{Type: abi.ActionSetPartition, Target: target, Partition: &partition, Hold: hold}
}

// UpdateClaimUpdateStatus replaces the target VolumeClaimUpdate's status.
func UpdateClaimUpdateStatus(target abi.ObjectRef, status abi.VolumeClaimUpdateStatus) abi.Action {
	return abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: target, ClaimUpdateStatus: &status}
}

// DeleteVolume deletes the backing volume of the target PersistentVolume
// through the CSI driver named in volume.
//
//	sdk.DeleteVolume(sdk.RefOf(pv), abi.VolumeDelete{Driver: pv.Spec.CSI.Driver, VolumeHandle: pv.Spec.CSI.VolumeHandle})
func DeleteVolume(target abi.ObjectRef, volume abi.VolumeDelete) abi.Action {
	return abi.Action{Type: abi.ActionDeleteVolume, Target: target, Volume: &volume}
}

// Event records a Kubernetes Event of eventType (abi.EventNormal or
// abi.EventWarning) on the target.
func Event(target abi.ObjectRef, eventType, reason, message string) abi.Action {
	return abi.Action{Type: abi.ActionEvent, Target: target, Event: &abi.Event{Type: eventType, Reason: reason, Message: message}}
}

// Warning records a Warning event on the target.
//
//	sdk.Warning(sdk.RefOf(set), "ClaimsRetainedForever", "claims outlive the set")
func Warning(target abi.ObjectRef, reason, message string) abi.Action {
	return Event(target, abi.EventWarning, reason, message)
}

// Normal records a Normal event on the target.
func Normal(target abi.ObjectRef, reason, message string) abi.Action {
	return Event(target, abi.EventNormal, reason, message)
}

// Apply server-side applies object, a partial object as JSON, to the
// target with the module's own field manager (ABI 1.6, a module that
// declares watches): object holds the target's apiVersion and kind and the
// fields the module owns, each under a path its apply capability grants.
//
//	sdk.Apply(ref, []byte(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{"minAvailable":1}}`))
func Apply(target abi.ObjectRef, object []byte) abi.Action {
	return abi.Action{Type: abi.ActionApply, Target: target, Object: object}
}

// Create creates object, as JSON, an object of one of the module's
// relations, in the subject's namespace with the subject as its controller
// (ABI 1.6). target names its kind, namespace and name; an empty name with
// metadata.generateName in object lets the API server pick one.
func Create(target abi.ObjectRef, object []byte) abi.Action {
	return abi.Action{Type: abi.ActionCreate, Target: target, Object: object}
}

// ApplyStatus server-side applies object's status, as JSON, to the
// subject's status subresource (ABI 1.6): object holds the subject's
// apiVersion, kind and status.
func ApplyStatus(subject abi.ObjectRef, object []byte) abi.Action {
	return abi.Action{Type: abi.ActionApplyStatus, Target: subject, Object: object}
}
