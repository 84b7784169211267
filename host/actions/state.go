package actions

import "github.com/kubeplug/kubeplug/abi"

// objectState is what the executor knows of an object part way through a
// Result: the module's view updated by the writes made since. Without it the
// second of two writes on one object would carry a stale resourceVersion and
// conflict with the first, or compute its list from the old one and undo the
// first (removeFinalizer a, then removeFinalizer b, would put a back).
type objectState struct {
	rv string
	// inputRV is the resourceVersion the input gave the object, and
	// written is set once a patch or delete of it was made: Report.Written
	// lists such objects with their inputRV.
	inputRV    string
	written    bool
	ownerRefs  []abi.OwnerReference
	finalizers []string
	deleting   bool
	// partition is the effective rollingUpdate.partition (API default 0),
	// and hold a StatefulSet's record of a hold (abi.PartitionHold): its
	// annotations abi.AnnotationHeldPartition and AnnotationUserPartition,
	// those it has.
	partition int32
	hold      map[string]string
	// status is a VolumeClaimUpdate's status.
	status *abi.VolumeClaimUpdateStatus
	// applied is set once an applyClaim was sent: the claim's labels,
	// annotations and resources are then no longer known, so later applies
	// on it are sent without a no-op check.
	applied bool
	// claimStorage is a claim's storage request, the host's record of it
	// and its capacity, as the input shows them and the applies of this
	// Result changed them: a later apply is held to the storage rule on it.
	claimStorage claimStorage
	// volumeDeleted is set once this Result deleted the object's backing
	// volume through CSI.
	volumeDeleted bool
	// gone, when set, says why no further write on the object may be sent:
	// it was deleted, or its resourceVersion is unknown.
	gone string
}

func newObjectState(t Target) *objectState {
	st := &objectState{
		rv:         t.ResourceVersion,
		inputRV:    t.ResourceVersion,
		ownerRefs:  t.OwnerReferences,
		finalizers: t.Finalizers,
		deleting:   t.Deleting,
	}
	switch o := t.Object.(type) {
	case *abi.StatefulSet:
		if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			st.partition = *ru.Partition
		}
		st.hold = holdAnnotations(o.Metadata.Annotations)
	case *abi.PersistentVolumeClaim:
		st.claimStorage = claimStorageOf(o)
	case *abi.VolumeClaimUpdate:
		s := o.Status
		st.status = &s
	}
	return st
}

// objectStates holds the state of each object written in one Result.
type objectStates map[abi.ObjectRef]*objectState

func (s objectStates) of(t Target) *objectState {
	ref := t.Ref()
	st, ok := s[ref]
	if !ok {
		st = newObjectState(t)
		s[ref] = st
	}
	return st
}

// written returns the objects a patch or delete of this Result changed, each
// with the resourceVersion the input gave it; nil when none.
func (s objectStates) written() map[abi.ObjectRef]string {
	var out map[abi.ObjectRef]string
	for ref, st := range s {
		if !st.written || st.inputRV == "" {
			continue
		}
		if out == nil {
			out = make(map[abi.ObjectRef]string)
		}
		out[ref] = st.inputRV
	}
	return out
}
