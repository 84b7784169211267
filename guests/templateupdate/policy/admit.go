package policy

import (
	"sort"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// rewriteClaim gives a claim the StatefulSet controller creates from the
// set's old template the VolumeClaimUpdate's template instead, when its
// replica is one the rollout has reached (KEP-4650 "Updated Reconciliation
// Logic" 3: use the current or the updated revision of the templates to
// create the claim, just like the pod template). Everything else is
// admitted unchanged.
func rewriteClaim(req *abi.AdmitRequest) (sdk.Admission, error) {
	claim, set, vcu := admitted(req)
	if claim == nil {
		return sdk.Allow(), nil
	}
	name := claim.Metadata.Name
	if name == "" {
		name = req.Name
	}
	tname, ordinal, ok := sdk.MatchClaim(set, name)
	if !ok {
		return sdk.Allow(), nil
	}
	t := vcuTemplate(vcu, tname)
	if t == nil {
		return sdk.Allow(), nil
	}
	start, _ := sdk.OrdinalRange(set)
	if ordinal-start < newTemplateFrom(set, vcu) {
		return sdk.Allow(), nil
	}
	return patchTo(claim, t)
}

// admitted returns the claim under creation, its set and the set's
// VolumeClaimUpdate; nil claim when any is missing or the update is being
// deleted.
func admitted(req *abi.AdmitRequest) (*abi.PersistentVolumeClaim, *abi.StatefulSet, *abi.VolumeClaimUpdate) {
	if req.Operation != abi.OperationCreate || req.Object == nil || req.Object.PersistentVolumeClaim == nil {
		return nil, nil, nil
	}
	s := req.StatefulSet
	if s == nil || s.Set == nil || s.ClaimUpdate == nil {
		return nil, nil, nil
	}
	if s.ClaimUpdate.Metadata.DeletionTimestamp != "" || s.ClaimUpdate.Spec.StatefulSetName != s.Set.Metadata.Name {
		return nil, nil, nil
	}
	return req.Object.PersistentVolumeClaim, s.Set, s.ClaimUpdate
}

func vcuTemplate(vcu *abi.VolumeClaimUpdate, name string) *abi.PersistentVolumeClaim {
	for i := range vcu.Spec.VolumeClaimTemplates {
		if vcu.Spec.VolumeClaimTemplates[i].Metadata.Name == name {
			return &vcu.Spec.VolumeClaimTemplates[i]
		}
	}
	return nil
}

// newTemplateFrom is the lowest index whose new claims get the new
// template, T: the replicas the rollout has reached, as new pods get the
// update revision. Under pod OnDelete every new pod gets the update
// revision, so every new claim gets the new template. While LockStep holds
// the partition, the replica being worked on (held-1) is one of them.
func newTemplateFrom(set *abi.StatefulSet, vcu *abi.VolumeClaimUpdate) int {
	if set.Spec.UpdateStrategy.Type == "OnDelete" {
		return 0
	}
	h := holdOf(set, vcu)
	if h.held != nil && vcu.Spec.VolumeClaimSyncStrategy == syncLockStep {
		return int(*h.held) - 1
	}
	return int(h.user)
}

// patchTo rewrites claim to template t with one JSON patch operation per
// field that differs; the claim's own labels and annotations (the set's
// selector labels) stay.
func patchTo(claim, t *abi.PersistentVolumeClaim) (sdk.Admission, error) {
	a := sdk.Allow()
	ops := []func(*sdk.Admission, *abi.PersistentVolumeClaim, *abi.PersistentVolumeClaim) error{
		patchAccessModes, patchStorageClass, patchResources, patchVolumeMode, patchVolumeAttributesClass,
	}
	for _, op := range ops {
		if err := op(&a, claim, t); err != nil {
			return sdk.Admission{}, err
		}
	}
	if err := patchMap(&a, "labels", claim.Metadata.Labels, t.Metadata.Labels); err != nil {
		return sdk.Admission{}, err
	}
	if err := patchMap(&a, "annotations", claim.Metadata.Annotations, t.Metadata.Annotations); err != nil {
		return sdk.Admission{}, err
	}
	return a, nil
}

func patchAccessModes(a *sdk.Admission, c, t *abi.PersistentVolumeClaim) error {
	if len(t.Spec.AccessModes) == 0 || sameSet(c.Spec.AccessModes, t.Spec.AccessModes) {
		return nil
	}
	return a.Patch(abi.PatchAdd, sdk.Pointer("spec", "accessModes"), t.Spec.AccessModes)
}

func patchStorageClass(a *sdk.Admission, c, t *abi.PersistentVolumeClaim) error {
	return patchOptional(a, "storageClassName", c.Spec.StorageClassName, t.Spec.StorageClassName)
}

func patchVolumeAttributesClass(a *sdk.Admission, c, t *abi.PersistentVolumeClaim) error {
	return patchOptional(a, "volumeAttributesClassName", c.Spec.VolumeAttributesClassName, t.Spec.VolumeAttributesClassName)
}

// patchOptional sets spec.field to t's value, or removes it when t leaves it
// unset (the API server then defaults it, as for a claim created from t).
func patchOptional(a *sdk.Admission, field string, have, want *string) error {
	switch {
	case want == nil && have != nil:
		return a.Patch(abi.PatchRemove, sdk.Pointer("spec", field), nil)
	case want != nil && (have == nil || *have != *want):
		return a.Patch(abi.PatchAdd, sdk.Pointer("spec", field), *want)
	}
	return nil
}

func patchResources(a *sdk.Admission, c, t *abi.PersistentVolumeClaim) error {
	if sameQuantities(c.Spec.Resources.Requests, t.Spec.Resources.Requests) && sameQuantities(c.Spec.Resources.Limits, t.Spec.Resources.Limits) {
		return nil
	}
	return a.Patch(abi.PatchAdd, sdk.Pointer("spec", "resources"), t.Spec.Resources)
}

func patchVolumeMode(a *sdk.Admission, c, t *abi.PersistentVolumeClaim) error {
	if volumeMode(c.Spec.VolumeMode) == volumeMode(t.Spec.VolumeMode) {
		return nil
	}
	return a.Patch(abi.PatchAdd, sdk.Pointer("spec", "volumeMode"), volumeMode(t.Spec.VolumeMode))
}

// patchMap adds t's keys the claim lacks or has with another value, in key
// order so the patch is the same on every call.
func patchMap(a *sdk.Admission, field string, have, want map[string]string) error {
	if superset(have, want) {
		return nil
	}
	if have == nil {
		return a.Patch(abi.PatchAdd, sdk.Pointer("metadata", field), want)
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := have[k]; !ok || v != want[k] {
			if err := a.Patch(abi.PatchAdd, sdk.Pointer("metadata", field, k), want[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameQuantities compares resource lists by value: "1Gi" and "1024Mi" are
// the same request.
func sameQuantities(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || quantity(v).Cmp(quantity(w)) != 0 {
			return false
		}
	}
	return true
}
