package policy

import (
	"slices"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

const storage = "storage"

// compatible is KEP-4650's "What PVC is compatible", exactly: the immutable
// fields equal, labels and annotations a superset of the template's, the
// capacity at least the template's request, and the current
// VolumeAttributesClass the template's. A claim with no capacity (not bound
// yet) is not compatible. annotations are templateAnnotations(t) and
// capacityReaches says the claim has a capacity of at least t's request,
// both worked out once by the caller (see plan.judge).
func compatible(c, t *abi.PersistentVolumeClaim, annotations map[string]string, capacityReaches bool) bool {
	return capacityReaches && immutableEqual(c, t) &&
		superset(c.Metadata.Labels, t.Metadata.Labels) &&
		superset(c.Metadata.Annotations, annotations) &&
		str(c.Status.CurrentVolumeAttributesClassName) == str(t.Spec.VolumeAttributesClassName)
}

// immutableEqual compares the fields a claim cannot change: access modes as a
// set, the class (a template without one matches any: the API server gives
// the claim the default class), and the volume mode (unset is Filesystem).
func immutableEqual(c, t *abi.PersistentVolumeClaim) bool {
	if t.Spec.StorageClassName != nil && str(c.Spec.StorageClassName) != *t.Spec.StorageClassName {
		return false
	}
	return volumeMode(c.Spec.VolumeMode) == volumeMode(t.Spec.VolumeMode) && sameSet(c.Spec.AccessModes, t.Spec.AccessModes)
}

// immutableDiff names the first immutable field that differs, for messages.
func immutableDiff(c, t *abi.PersistentVolumeClaim) string {
	switch {
	case t.Spec.StorageClassName != nil && str(c.Spec.StorageClassName) != *t.Spec.StorageClassName:
		return "storageClassName"
	case volumeMode(c.Spec.VolumeMode) != volumeMode(t.Spec.VolumeMode):
		return "volumeMode"
	case !sameSet(c.Spec.AccessModes, t.Spec.AccessModes):
		return "accessModes"
	}
	return "volumeAttributesClassName"
}

// inPlaceable reports whether an in-place update can make c compatible
// (KEP-4650 "Updated Reconciliation Logic" 1: only mutable fields differ):
// a claim being deleted is left to its recreation, and a
// VolumeAttributesClass cannot be removed from a claim.
func inPlaceable(c, t *abi.PersistentVolumeClaim) bool {
	if c.Metadata.DeletionTimestamp != "" || !immutableEqual(c, t) {
		return false
	}
	return !(str(t.Spec.VolumeAttributesClassName) == "" && (str(c.Spec.VolumeAttributesClassName) != "" || str(c.Status.CurrentVolumeAttributesClassName) != ""))
}

// updating reports an in-place update in flight: the spec asks for more
// storage than the volume has, or for a class the volume does not have yet,
// and the resizer has not given up. want and capacity are the claim's
// storage request and capacity, parsed (zero when absent).
func updating(c *abi.PersistentVolumeClaim, want, capacity sdk.Quantity) bool {
	if failed(c) {
		return false
	}
	if want.Cmp(capacity) > 0 {
		return true
	}
	vac := str(c.Spec.VolumeAttributesClassName)
	return vac != "" && vac != str(c.Status.CurrentVolumeAttributesClassName)
}

// failed reports an expansion or modification the resizer reports it cannot
// do (KEP-4650: "If the PVC update fails, we should block the update
// process"). An expansion failure counts only while it is about the claim's
// request: status.allocatedResources.storage is what the resizer tried, and
// a request lowered below it since (KEP-4650: "decrease the size can help
// recover from a failed expansion") is a new attempt, in flight.
func failed(c *abi.PersistentVolumeClaim) bool {
	switch c.Status.AllocatedResourceStatuses[storage] {
	case "ControllerResizeInfeasible", "NodeResizeInfeasible":
		if !recovering(c) {
			return true
		}
	}
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case "ControllerResizeError", "NodeResizeError":
			if cond.Status == "True" && !recovering(c) {
				return true
			}
		case "ModifyVolumeError":
			if cond.Status == "True" {
				return true
			}
		}
	}
	return false
}

// recovering reports a request lowered below the size the resizer last
// tried (status.allocatedResources.storage): the failure it reports is
// about that size, not this request.
func recovering(c *abi.PersistentVolumeClaim) bool {
	tried, ok := c.Status.AllocatedResources[storage]
	return ok && quantity(c.Spec.Resources.Requests[storage]).Cmp(quantity(tried)) < 0
}

// specReaches reports whether the claim's spec asks for at least t's
// storage and t's VolumeAttributesClass: once the volume has what the spec
// asks, the claim is compatible.
func specReaches(c, t *abi.PersistentVolumeClaim) bool {
	return quantity(c.Spec.Resources.Requests[storage]).Cmp(quantity(t.Spec.Resources.Requests[storage])) >= 0 &&
		str(c.Spec.VolumeAttributesClassName) == str(t.Spec.VolumeAttributesClassName) &&
		superset(c.Metadata.Labels, t.Metadata.Labels) && superset(c.Metadata.Annotations, templateAnnotations(t))
}

// wantStorage is the storage an in-place update asks for, and whether that
// grows or lowers the claim's request. KEP-4650: "Do not perform the update
// that will be rejected by API server, such as decreasing the storage size
// below its current status. Note that decrease the size can help recover
// from a failed expansion". kube-apiserver (RecoverVolumeExpansionFailure,
// GA since 1.34) accepts a lower request only while it stays strictly above
// status.capacity. So the request is the template's, but:
//   - never below the capacity (the volume has it; asking less is refused);
//   - never below a request someone else set (by hand, or at creation):
//     lowering it would cancel a user's expansion, which upstream review of
//     the KEP called out. Only a request kubeplug set itself (the host's
//     record, abi.AnnotationAppliedStorage, equals it) may be lowered;
//   - a lowering that would reach the capacity keeps the request as it is.
func wantStorage(c, t *abi.PersistentVolumeClaim) (want string, grow, lower bool) {
	spec := c.Spec.Resources.Requests[storage]
	want = t.Spec.Resources.Requests[storage]
	floors := []string{c.Status.Capacity[storage]}
	if !kubeplugSet(c) {
		floors = append(floors, spec)
	}
	for _, s := range floors {
		if s != "" && quantity(s).Cmp(quantity(want)) > 0 {
			want = s
		}
	}
	if want == "" {
		return spec, false, false
	}
	switch cmp := quantity(want).Cmp(quantity(spec)); {
	case spec == "" || cmp > 0:
		return want, true, false
	case cmp < 0 && quantity(want).Cmp(quantity(c.Status.Capacity[storage])) > 0:
		return want, false, true
	}
	return spec, false, false
}

// kubeplugSet reports whether the claim's storage request is the one
// kubeplug applied: the host records each request it applies in
// abi.AnnotationAppliedStorage, and a request anyone changed since differs.
func kubeplugSet(c *abi.PersistentVolumeClaim) bool {
	rec, ok := c.Metadata.Annotations[abi.AnnotationAppliedStorage]
	spec := c.Spec.Resources.Requests[storage]
	return ok && spec != "" && quantity(rec).Cmp(quantity(spec)) == 0
}

// templateAnnotations is t's annotations without the host's record, which
// only the host writes.
func templateAnnotations(t *abi.PersistentVolumeClaim) map[string]string {
	if _, ok := t.Metadata.Annotations[abi.AnnotationAppliedStorage]; !ok {
		return t.Metadata.Annotations
	}
	out := make(map[string]string, len(t.Metadata.Annotations))
	for k, v := range t.Metadata.Annotations {
		if k != abi.AnnotationAppliedStorage {
			out[k] = v
		}
	}
	return out
}

// expansionAllowed reports whether the claim's StorageClass allows volume
// expansion; the API server refuses a larger request otherwise, so the
// module must not send one (a missing class cannot be known to allow it).
func expansionAllowed(req *sdk.Request, c *abi.PersistentVolumeClaim) bool {
	name := str(c.Spec.StorageClassName)
	if name == "" {
		return false
	}
	sc := req.StorageClass(name)
	return sc != nil && sc.AllowVolumeExpansion
}

// quantity parses s; an unparsable or empty quantity counts as zero, as a
// missing one does.
func quantity(s string) sdk.Quantity {
	q, err := sdk.ParseQuantity(s)
	if err != nil {
		return sdk.Quantity{}
	}
	return q
}

func volumeMode(m string) string {
	if m == "" {
		return "Filesystem"
	}
	return m
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func superset(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}
