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
// yet) is not compatible.
func compatible(c, t *abi.PersistentVolumeClaim) bool {
	return immutableEqual(c, t) &&
		superset(c.Metadata.Labels, t.Metadata.Labels) &&
		superset(c.Metadata.Annotations, t.Metadata.Annotations) &&
		capacityReaches(c, t) &&
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
// and the resizer has not given up.
func updating(c *abi.PersistentVolumeClaim) bool {
	if failed(c) {
		return false
	}
	want, capacity := quantity(c.Spec.Resources.Requests[storage]), quantity(c.Status.Capacity[storage])
	if want.Cmp(capacity) > 0 {
		return true
	}
	vac := str(c.Spec.VolumeAttributesClassName)
	return vac != "" && vac != str(c.Status.CurrentVolumeAttributesClassName)
}

// failed reports an expansion or modification the resizer reports it cannot
// do (KEP-4650: "If the PVC update fails, we should block the update
// process").
func failed(c *abi.PersistentVolumeClaim) bool {
	switch c.Status.AllocatedResourceStatuses[storage] {
	case "ControllerResizeInfeasible", "NodeResizeInfeasible":
		return true
	}
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case "ControllerResizeError", "NodeResizeError", "ModifyVolumeError":
			if cond.Status == "True" {
				return true
			}
		}
	}
	return false
}

// overSized reports a claim whose volume is larger than the template asks:
// KEP-4650 counts them, since storage is never lowered.
func overSized(c, t *abi.PersistentVolumeClaim) bool {
	capacity, ok := c.Status.Capacity[storage]
	return ok && quantity(capacity).Cmp(quantity(t.Spec.Resources.Requests[storage])) > 0
}

func capacityReaches(c, t *abi.PersistentVolumeClaim) bool {
	capacity, ok := c.Status.Capacity[storage]
	return ok && quantity(capacity).Cmp(quantity(t.Spec.Resources.Requests[storage])) >= 0
}

// wantStorage is the storage an in-place update asks for: the largest of the
// template's request, the claim's request and its capacity. KEP-4650 says
// not to perform an update the API server rejects (lowering below the
// status); upstream review found max(template, status) would also revert a
// user's manual expansion still in flight, so the claim's own request counts
// too. grow is true when it is more than the claim asks for now.
func wantStorage(c, t *abi.PersistentVolumeClaim) (want string, grow bool) {
	spec := c.Spec.Resources.Requests[storage]
	want = spec
	for _, s := range []string{t.Spec.Resources.Requests[storage], c.Status.Capacity[storage]} {
		if s != "" && quantity(s).Cmp(quantity(want)) > 0 {
			want = s
		}
	}
	return want, want != spec && quantity(want).Cmp(quantity(spec)) > 0
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
