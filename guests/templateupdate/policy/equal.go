package policy

import (
	"maps"

	"github.com/kubeplug/kubeplug/abi"
)

// statusEqual compares two statuses field by field (no reflection in
// guests): the module writes only when they differ.
func statusEqual(a, b *abi.VolumeClaimUpdateStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || !int32PtrEqual(a.HeldPartition, b.HeldPartition) ||
		!int32PtrEqual(a.UserPartition, b.UserPartition) ||
		len(a.VolumeClaimTemplates) != len(b.VolumeClaimTemplates) || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.VolumeClaimTemplates {
		x, y := &a.VolumeClaimTemplates[i], &b.VolumeClaimTemplates[i]
		if x.TemplateName != y.TemplateName || x.CompatibleReplicas != y.CompatibleReplicas ||
			x.UpdatingReplicas != y.UpdatingReplicas || x.OverSizedReplicas != y.OverSizedReplicas ||
			!maps.Equal(x.TotalCapacity, y.TotalCapacity) {
			return false
		}
	}
	for i := range a.Conditions {
		if a.Conditions[i] != b.Conditions[i] {
			return false
		}
	}
	return true
}

func int32PtrEqual(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
