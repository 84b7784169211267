package memcluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// errModified is the API server's message for a stale resourceVersion.
var errModified = errors.New("the object has been modified; please apply your changes to the latest version and try again")

// Patch implements actions.Cluster. pt is types.MergePatchType (RFC 7386) or
// types.ApplyPatchType, which this cluster treats as a merge patch of the
// applied fields (see the package documentation). A patch that carries
// metadata.resourceVersion or metadata.uid fails with a conflict when the
// stored object's differs. The only subresource is "status", which changes
// .status and nothing else. A patch that changes nothing keeps the
// resourceVersion and is not counted as a write. A patch that removes the last
// finalizer of an object under deletion removes the object.
func (c *Cluster) Patch(ctx context.Context, kind, namespace, name string, pt types.PatchType, data []byte, fieldManager string, subresource ...string) (string, error) {
	return c.patch(ctx, kind, namespace, name, pt, data, fieldManager, true, subresource...)
}

// patch is Patch; an apply that does not force fails with the fields it
// would take from other managers (conflicts).
func (c *Cluster) patch(ctx context.Context, kind, namespace, name string, pt types.PatchType, data []byte, fieldManager string, force bool, subresource ...string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++

	gr := groupResource(kind)
	status, err := statusSubresource(kind, subresource)
	if err != nil {
		return "", err
	}
	patch, err := decodePatch(kind, pt, data, fieldManager)
	if err != nil {
		return "", err
	}
	k := c.key(kind, namespace, name)
	stored, ok := c.objects[k]
	pm, _ := patch["metadata"].(map[string]any)
	if !ok {
		if uid := str(pm, "uid"); pt == types.ApplyPatchType && uid != "" {
			// The API server's apply would create the object, but not
			// under a uid it never had (measured on 1.37).
			return "", apierrors.NewConflict(gr, name, fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", uid))
		}
		return "", apierrors.NewNotFound(gr, name)
	}
	if err := checkPreconditions(k, stored, str(pm, "uid"), str(pm, "resourceVersion")); err != nil {
		return "", err
	}

	// leaves are the fields a server-side apply of the object sets; nil
	// for any other write.
	var leaves map[fieldPath]bool
	if pt == types.ApplyPatchType && !status {
		leaves = appliedLeaves(patch)
		if !force {
			if err := c.ownersOf(stored).conflicts(gr, name, fieldManager, leaves, patch, stored); err != nil {
				return "", err
			}
		}
	}
	updated := runtime.DeepCopyJSON(stored)
	if status {
		if s, ok := patch["status"]; ok {
			setOrDelete(updated, "status", mergePatch(updated["status"], s))
		}
	} else {
		updated = mergePatch(updated, patch).(map[string]any)
		if leaves != nil {
			c.ownersOf(stored).dropUnapplied(fieldManager, leaves, updated)
		}
		if hasStatusSubresource(kind) {
			setOrDelete(updated, "status", runtime.DeepCopyJSONValue(stored["status"]))
		}
	}
	if err := checkIdentity(k, updated); err != nil {
		return "", err
	}
	if updated, err = canonical(updated); err != nil {
		return "", apierrors.NewBadRequest(fmt.Sprintf("%s: patched object does not fit the %s schema: %v", k, kind, err))
	}
	keepServerFields(stored, updated)
	if err := validateSpec(k, stored, updated); err != nil {
		return "", err
	}
	if !status {
		if err := c.checkResize(k, stored, updated); err != nil {
			return "", err
		}
	}
	if err := checkFinalizers(k, stored, updated); err != nil {
		return "", err
	}
	if !status && !reflect.DeepEqual(withoutMetaAndStatus(stored), withoutMetaAndStatus(updated)) {
		metadata(updated)["generation"] = generation(stored) + 1
	}

	if leaves != nil {
		c.ownersOf(stored).recordApply(fieldManager, leaves, stored, updated)
	} else if o, ok := c.owners[str(metadata(stored), "uid")]; ok {
		o.recordUpdate(stored, updated)
	}
	if reflect.DeepEqual(stored, updated) {
		return str(metadata(stored), "resourceVersion"), nil
	}
	if str(metadata(updated), "deletionTimestamp") != "" && len(finalizers(updated)) == 0 {
		return c.remove(k, updated), nil
	}
	return c.store(k, updated), nil
}

// ownersOf is the field ownership of obj. The caller holds mu.
func (c *Cluster) ownersOf(obj map[string]any) ownership {
	uid := str(metadata(obj), "uid")
	if c.owners == nil {
		c.owners = map[string]ownership{}
	}
	o, ok := c.owners[uid]
	if !ok {
		o = ownership{}
		c.owners[uid] = o
	}
	return o
}

// statusSubresource reports whether subresource names the status
// subresource, and fails for any other subresource.
func statusSubresource(kind string, subresource []string) (bool, error) {
	switch {
	case len(subresource) == 0 || (len(subresource) == 1 && subresource[0] == ""):
		return false, nil
	case len(subresource) == 1 && subresource[0] == "status" && hasStatusSubresource(kind):
		return true, nil
	}
	return false, apierrors.NewBadRequest(fmt.Sprintf("%s has no subresource %q", groupResource(kind), subresource))
}

// decodePatch parses a patch body into a JSON object.
func decodePatch(kind string, pt types.PatchType, data []byte, fieldManager string) (map[string]any, error) {
	switch pt {
	case types.MergePatchType:
	case types.ApplyPatchType:
		// Apply bodies may be YAML, and must name the object's type and
		// their field manager.
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("apply patch is not YAML or JSON: %v", err))
		}
		data = j
		if fieldManager == "" {
			return nil, apierrors.NewBadRequest("fieldManager is required for apply requests")
		}
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patch type %q is not supported by memcluster (use %q or %q)", pt, types.MergePatchType, types.ApplyPatchType))
	}
	v, err := decodeJSON(data)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patch is not JSON: %v", err))
	}
	patch, ok := v.(map[string]any)
	if !ok {
		return nil, apierrors.NewBadRequest("patch is not a JSON object")
	}
	if pt == types.ApplyPatchType && (str(patch, "kind") != kind || str(patch, "apiVersion") == "") {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("apply patch must carry apiVersion and kind %q", kind))
	}
	return patch, nil
}

// checkPreconditions fails with a conflict when uid or resourceVersion is set
// and differs from stored's. It serves patches and deletes alike.
func checkPreconditions(k Key, stored map[string]any, uid, resourceVersion string) error {
	meta := metadata(stored)
	if uid != "" && uid != str(meta, "uid") {
		return apierrors.NewConflict(groupResource(k.Kind), k.Name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, str(meta, "uid")))
	}
	if resourceVersion != "" && resourceVersion != str(meta, "resourceVersion") {
		return apierrors.NewConflict(groupResource(k.Kind), k.Name, errModified)
	}
	return nil
}

// checkIdentity refuses a patch that renames or retypes the object.
func checkIdentity(k Key, updated map[string]any) error {
	if got := keyOf(updated); got != k {
		return apierrors.NewBadRequest(fmt.Sprintf("%s: a patch cannot change kind, namespace or name (got %s)", k, got))
	}
	return nil
}

// keepServerFields undoes any change of the fields only the server writes.
func keepServerFields(stored, updated map[string]any) {
	from, to := metadata(stored), metadata(updated)
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"} {
		setOrDelete(to, f, runtime.DeepCopyJSONValue(from[f]))
	}
}

// validateSpec refuses what kube-apiserver's validation of the kind refuses,
// where an action can write it: a claim's spec is immutable but for a bound
// claim's storage request and volumeAttributesClassName (applyClaim); a
// StatefulSet's partition (setPartition) must be at least 0, and only a
// RollingUpdate strategy has one.
func validateSpec(k Key, stored, updated map[string]any) error {
	switch k.Kind {
	case "PersistentVolumeClaim":
		return validateClaimUpdate(k, stored, updated)
	case "StatefulSet":
		return validateRollingUpdate(k, updated)
	}
	return nil
}

// validateRollingUpdate is kube-apiserver's check of a StatefulSet's
// rollingUpdate: only under a RollingUpdate strategy, with a partition of at
// least 0.
func validateRollingUpdate(k Key, updated map[string]any) error {
	strategy := mapAt(updated, "spec", "updateStrategy")
	ru, ok := nested(strategy, "rollingUpdate")
	if !ok {
		return nil
	}
	path := field.NewPath("spec", "updateStrategy", "rollingUpdate")
	if typ := str(strategy, "type"); typ != "" && typ != "RollingUpdate" {
		return apierrors.NewInvalid(groupKind(k.Kind), k.Name, field.ErrorList{
			field.Invalid(path, ru, "only allowed for updateStrategy 'RollingUpdate'"),
		})
	}
	if p, ok := ru["partition"].(int64); ok && p < 0 {
		return apierrors.NewInvalid(groupKind(k.Kind), k.Name, field.ErrorList{
			field.Invalid(path.Child("partition"), p, "must be greater than or equal to 0"),
		})
	}
	return nil
}

// validateClaimUpdate is kube-apiserver's ValidatePersistentVolumeClaimUpdate
// (1.37, VolumeAttributesClass and RecoverVolumeExpansionFailure on, as they
// are by default) for what a patch can change: a claim's spec is immutable,
// except that volumeName may be set once, and that a bound claim's storage
// request and volumeAttributesClassName may change; the request may go down
// only while it stays above status.capacity, and a class once applied
// (status.currentVolumeAttributesClassName) cannot be removed.
func validateClaimUpdate(k Key, stored, updated map[string]any) error {
	oldSpec, _ := runtime.DeepCopyJSONValue(stored["spec"]).(map[string]any)
	newSpec, _ := runtime.DeepCopyJSONValue(updated["spec"]).(map[string]any)
	if oldSpec == nil {
		oldSpec = map[string]any{}
	}
	if newSpec == nil {
		newSpec = map[string]any{}
	}
	oldStatus, _ := stored["status"].(map[string]any)
	newStatus, _ := updated["status"].(map[string]any)
	var errs field.ErrorList
	if str(oldSpec, "volumeName") == "" {
		setOrDelete(oldSpec, "volumeName", newSpec["volumeName"])
	}
	bound := str(newStatus, "phase") == "Bound"
	oldSize, newSize := quantityAt(oldSpec, "resources", "requests", "storage"), quantityAt(newSpec, "resources", "requests", "storage")
	if bound {
		if requests, ok := nested(newSpec, "resources", "requests"); ok {
			setOrDelete(requests, "storage", runtime.DeepCopyJSONValue(mapAt(oldSpec, "resources", "requests")["storage"]))
		}
		setOrDelete(newSpec, "volumeAttributesClassName", oldSpec["volumeAttributesClassName"])
	}
	if !reflect.DeepEqual(oldSpec, newSpec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"))
	}
	if newSize.Cmp(oldSize) < 0 && newSize.Cmp(quantityAt(oldStatus, "capacity", "storage")) <= 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
	}
	if str(oldStatus, "currentVolumeAttributesClassName") != "" {
		switch vac, ok := mapAt(updated, "spec")["volumeAttributesClassName"].(string); {
		case !ok:
			errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update to nil is forbidden when status.currentVolumeAttributesClassName is not nil"))
		case vac == "":
			errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update to empty string is forbidden when status.currentVolumeAttributesClassName is not nil"))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(groupKind(k.Kind), k.Name, errs)
	}
	return nil
}

// checkResize is kube-apiserver's PersistentVolumeClaimResize admission: a
// claim's storage request may grow only when the claim is bound and its
// StorageClass (the same before and after) allows volume expansion.
func (c *Cluster) checkResize(k Key, stored, updated map[string]any) error {
	if k.Kind != "PersistentVolumeClaim" {
		return nil
	}
	oldSize := quantityAt(stored, "spec", "resources", "requests", "storage")
	if newSize := quantityAt(updated, "spec", "resources", "requests", "storage"); newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	forbid := func(why string) error {
		return apierrors.NewForbidden(groupResource(k.Kind), k.Name, errors.New(why))
	}
	if str(mapAt(stored, "status"), "phase") != "Bound" {
		return forbid("Only bound persistent volume claims can be expanded")
	}
	class, oldClass := claimClass(updated), claimClass(stored)
	allowed := false
	if sc, ok := c.objects[c.key("StorageClass", "", class)]; ok && class != "" && class == oldClass {
		allowed, _ = sc["allowVolumeExpansion"].(bool)
	}
	if !allowed {
		return forbid("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize")
	}
	return nil
}

// claimClass is a claim's StorageClass: spec.storageClassName, else the
// beta annotation, as the API server reads it.
func claimClass(claim map[string]any) string {
	if name, ok := mapAt(claim, "spec")["storageClassName"].(string); ok {
		return name
	}
	return str(mapAt(claim, "metadata", "annotations"), "volume.beta.kubernetes.io/storage-class")
}

// nested is the map at path under m, if there is one.
func nested(m map[string]any, path ...string) (map[string]any, bool) {
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	return m, true
}

// mapAt is nested's map, or an empty one.
func mapAt(m map[string]any, path ...string) map[string]any {
	if n, ok := nested(m, path...); ok {
		return n
	}
	return map[string]any{}
}

// quantityAt is the quantity at path under m; zero when absent or not one.
func quantityAt(m map[string]any, path ...string) resource.Quantity {
	parent := mapAt(m, path[:len(path)-1]...)
	q, err := resource.ParseQuantity(str(parent, path[len(path)-1]))
	if err != nil {
		return resource.Quantity{}
	}
	return q
}

// checkFinalizers enforces the API server's rule that an object under
// deletion may lose finalizers but not gain any.
func checkFinalizers(k Key, stored, updated map[string]any) error {
	if str(metadata(stored), "deletionTimestamp") == "" {
		return nil
	}
	old := finalizers(stored)
	var added []string
	for _, f := range finalizers(updated) {
		if !slices.Contains(old, f) {
			added = append(added, f)
		}
	}
	if len(added) == 0 {
		return nil
	}
	return apierrors.NewInvalid(groupKind(k.Kind), k.Name, field.ErrorList{
		field.Forbidden(field.NewPath("metadata", "finalizers"),
			fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %#v", added)),
	})
}

// mergePatch applies an RFC 7386 JSON merge patch to target, which it may
// modify, and returns the result.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

func setOrDelete(m map[string]any, k string, v any) {
	if v == nil {
		delete(m, k)
		return
	}
	m[k] = v
}

// withoutMetaAndStatus is obj without the parts whose change does not bump
// metadata.generation.
func withoutMetaAndStatus(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "metadata" && k != "status" {
			out[k] = v
		}
	}
	return out
}
