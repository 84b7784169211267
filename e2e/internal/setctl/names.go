package setctl

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
)

// PodName is the name of the set's pod of ordinal: <set>-<ordinal>.
func PodName(set string, ordinal int32) string { return fmt.Sprintf("%s-%d", set, ordinal) }

// ClaimName is the name of the claim of template for the set's pod of
// ordinal: <template>-<set>-<ordinal>.
func ClaimName(template, set string, ordinal int32) string {
	return fmt.Sprintf("%s-%s-%d", template, set, ordinal)
}

// Range returns the ordinals set wants, [start, end): start is
// spec.ordinals.start, end is start plus spec.replicas (1 when unset).
func Range(set *appsv1.StatefulSet) (start, end int32) {
	if set.Spec.Ordinals != nil {
		start = set.Spec.Ordinals.Start
	}
	replicas := int32(1)
	if set.Spec.Replicas != nil {
		replicas = *set.Spec.Replicas
	}
	return start, start + replicas
}
