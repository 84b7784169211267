package sdk

import "github.com/kubeplug/kubeplug/abi"

// PartitionHoldOf reads the record of a hold that setPartition left on set
// (abi.PartitionHold): held is the partition the hold set, user the user's
// own (nil: none). ok is false when the set has no record, or one that is not
// a canonical non-negative int32 (a record someone else edited), which
// counts as none. Whether the hold is still in place is for the caller to
// compare: the set's partition still equals held.
//
//	held, user, ok := sdk.PartitionHoldOf(set)
func PartitionHoldOf(set *abi.StatefulSet) (held int32, user *int32, ok bool) {
	if set == nil {
		return 0, nil, false
	}
	a := set.Metadata.Annotations
	h, ok := parseOrdinal(a[abi.AnnotationHeldPartition])
	if !ok {
		return 0, nil, false
	}
	if s, has := a[abi.AnnotationUserPartition]; has {
		u, valid := parseOrdinal(s)
		if !valid {
			return 0, nil, false
		}
		v := int32(u)
		user = &v
	}
	return int32(h), user, true
}
