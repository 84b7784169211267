package actions

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/internal/ownerref"
)

// Validate checks action a of a module with manifest m against the input
// req the module answered, and resolves its target. It refuses, with an
// error wrapping ErrRefused that says what and why:
//   - an action type this ABI version does not know;
//   - a target kind that is not one of abi.Kinds();
//   - a type and resource m.Capabilities do not allow;
//   - a target that is not an object of req (kind, namespace, name and UID
//     must all match one);
//   - a payload that is missing or malformed for the type, or a type that
//     does not apply to the target (setPartition on a claim, deleteVolume on
//     a volume that is not CSI or whose driver or handle differ, ...).
//
// Validate does not check whether the host is configured for a deleteVolume
// driver; the Executor does, since that is host state, not input.
func Validate(m abi.Manifest, req *abi.ReconcileRequest, a abi.Action) (Target, error) {
	refuse := func(format string, args ...any) (Target, error) {
		return Target{}, fmt.Errorf("%w: %s on %s: %s", ErrRefused, a.Type, RefString(a.Target), fmt.Sprintf(format, args...))
	}
	if !abi.ActionType(a.Type).Known() {
		return refuse("unknown action type %q; this host knows %s", a.Type, strings.Join(abi.ActionTypes(), ", "))
	}
	if m.Watches != nil {
		return validateDeclared(m, req, a, refuse)
	}
	if a.Type == abi.ActionApply || a.Type == abi.ActionCreate || a.Type == abi.ActionApplyStatus {
		return refuse("%s acts on the kinds a module declares in watches, and module %q declares none", a.Type, m.Name)
	}
	info, ok := abi.LookupKind(a.Target.Kind)
	if !ok {
		return refuse("unknown target kind %q", a.Target.Kind)
	}
	if !allows(m, a.Type, info.Resource) {
		if a.Type == abi.ActionDeleteVolume {
			return refuse("module %q lacks the capability {action: %s} in its manifest", m.Name, a.Type)
		}
		return refuse("module %q lacks the capability {action: %s, resources: [%s]} in its manifest", m.Name, a.Type, info.Resource)
	}
	t, ok := resolve(req, a.Target)
	if !ok {
		return refuse("not an object of the reconcile input (kind, namespace, name and uid %q must match one)", a.Target.UID)
	}
	if why := checkPayload(req, a, t); why != "" {
		return refuse("%s", why)
	}
	return t, nil
}

// maxEventReason is the API server's limit on an event's reason.
const maxEventReason = 128

func allows(m abi.Manifest, action, resource string) bool {
	for _, c := range m.Capabilities {
		if c.Allows(action, resource) {
			return true
		}
	}
	return false
}

// checkPayload returns why a's payload is unusable on t, an object of req,
// or "".
func checkPayload(req *abi.ReconcileRequest, a abi.Action, t Target) string {
	switch a.Type {
	case abi.ActionUpdateOwnerReferences:
		return checkOwnerReferences(req, a.OwnerReferences, t)
	case abi.ActionAddFinalizer:
		if a.Finalizer == "" {
			return "finalizer is empty"
		}
		if t.Deleting && !slices.Contains(t.Finalizers, a.Finalizer) {
			return "the object is being deleted, and the API server accepts no new finalizer on it"
		}
		if errs := validation.IsQualifiedName(a.Finalizer); len(errs) > 0 {
			return fmt.Sprintf("finalizer %q is not a qualified name: %s", a.Finalizer, strings.Join(errs, "; "))
		}
	case abi.ActionRemoveFinalizer:
		if a.Finalizer == "" {
			return "finalizer is empty"
		}
	case abi.ActionDeleteObject:
	case abi.ActionApplyClaim:
		if t.Kind != abi.KindPersistentVolumeClaim {
			return "applyClaim applies only to a PersistentVolumeClaim"
		}
		if why := checkClaimApply(a.Claim); why != "" {
			return why
		}
		return claimShrink(claimStorageOf(t.Object.(*abi.PersistentVolumeClaim)), a.Claim)
	case abi.ActionSetPartition:
		if t.Kind != abi.KindStatefulSet {
			return "setPartition applies only to a StatefulSet"
		}
		if a.Partition == nil {
			return "partition is missing"
		}
		if *a.Partition < 0 {
			return fmt.Sprintf("partition %d is negative", *a.Partition)
		}
		if h := a.Hold; h != nil && h.UserPartition != nil && *h.UserPartition < 0 {
			return fmt.Sprintf("hold.userPartition %d is negative", *h.UserPartition)
		}
		// The API server rejects rollingUpdate settings under OnDelete.
		if typ := t.Object.(*abi.StatefulSet).Spec.UpdateStrategy.Type; typ != "" && typ != "RollingUpdate" {
			return fmt.Sprintf("the StatefulSet's updateStrategy is %s; a partition needs RollingUpdate", typ)
		}
	case abi.ActionUpdateClaimUpdateStatus:
		if t.Kind != abi.KindVolumeClaimUpdate {
			return "updateClaimUpdateStatus applies only to a VolumeClaimUpdate"
		}
		return checkClaimUpdateStatus(a.ClaimUpdateStatus)
	case abi.ActionDeleteVolume:
		return checkVolumeDelete(a.Volume, t)
	case abi.ActionEvent:
		e := a.Event
		switch {
		case e == nil:
			return "event is missing"
		case e.Type != abi.EventNormal && e.Type != abi.EventWarning:
			return fmt.Sprintf("event type %q is neither %s nor %s", e.Type, abi.EventNormal, abi.EventWarning)
		case e.Reason == "":
			return "event reason is empty"
		case len(e.Reason) > maxEventReason:
			return fmt.Sprintf("event reason is longer than %d bytes", maxEventReason)
		case !utf8.ValidString(e.Reason) || !utf8.ValidString(e.Message):
			return "event reason or message is not valid UTF-8"
		}
	}
	return ""
}

// checkOwnerReferences refuses a change that adds a reference the host's
// owner-reference rule (ownerref.Check, which admission holds admit patches
// to as well) refuses: anything but the subject StatefulSet or one of its
// pods, as the module's input shows them.
func checkOwnerReferences(req *abi.ReconcileRequest, c *abi.OwnerReferencesChange, t Target) string {
	if c == nil {
		return "ownerReferences is missing"
	}
	if len(c.Remove) == 0 && len(c.Add) == 0 {
		return "ownerReferences neither removes nor adds a reference"
	}
	if slices.Contains(c.Remove, "") {
		return "ownerReferences.remove lists an empty uid"
	}
	var set *abi.StatefulSetSubject
	if req != nil {
		set = req.StatefulSet
	}
	for i, r := range c.Add {
		if why := ownerref.Check(set, r, t.Namespace); why != "" {
			return fmt.Sprintf("ownerReferences.add[%d]: %s", i, why)
		}
		if slices.ContainsFunc(c.Add[:i], func(x abi.OwnerReference) bool { return x.UID == r.UID }) {
			return fmt.Sprintf("ownerReferences.add lists uid %q twice", r.UID)
		}
	}
	// That the result names at most one controller is checked by the
	// Executor, on the list the earlier actions of the Result leave.
	return ""
}

func checkClaimApply(c *abi.ClaimApply) string {
	if c == nil {
		return "claim is missing"
	}
	if c.Labels == nil && c.Annotations == nil && c.Resources == nil && c.VolumeAttributesClassName == nil {
		return "claim sets no field"
	}
	for k, v := range c.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Sprintf("label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Sprintf("label %q value %q: %s", k, v, strings.Join(errs, "; "))
		}
	}
	for k := range c.Annotations {
		if k == abi.AnnotationAppliedStorage {
			return fmt.Sprintf("annotation %s is the host's record of the storage request it applied; a module may not set it (leave it out: the host writes it with every apply that carries storage)", k)
		}
		if errs := validation.IsQualifiedName(strings.ToLower(k)); len(errs) > 0 {
			return fmt.Sprintf("annotation key %q: %s", k, strings.Join(errs, "; "))
		}
	}
	if r := c.Resources; r != nil {
		if why := checkQuantities("claim.resources.requests", r.Requests); why != "" {
			return why
		}
		if why := checkQuantities("claim.resources.limits", r.Limits); why != "" {
			return why
		}
	}
	return ""
}

// claimStorage is what the storage rule reads of a claim: its
// spec.resources.requests.storage, the host's record of the request kubeplug
// last applied (abi.AnnotationAppliedStorage), and status.capacity.storage.
// Empty strings are unset.
type claimStorage struct {
	request, record, capacity string
}

func claimStorageOf(c *abi.PersistentVolumeClaim) claimStorage {
	return claimStorage{
		request:  c.Spec.Resources.Requests[storageResource],
		record:   c.Metadata.Annotations[abi.AnnotationAppliedStorage],
		capacity: c.Status.Capacity[storageResource],
	}
}

// kubeplugSet reports whether the claim's request is the one kubeplug's
// apply set: it equals the host's record, by value.
func (s claimStorage) kubeplugSet() bool {
	if s.record == "" || s.request == "" {
		return false
	}
	rec, err1 := resource.ParseQuantity(s.record)
	req, err2 := resource.ParseQuantity(s.request)
	return err1 == nil && err2 == nil && rec.Cmp(req) == 0
}

// claimShrink refuses an apply whose storage request is lower than the
// claim's current one, or "". kube-apiserver (RecoverVolumeExpansionFailure,
// GA since 1.34) accepts a lower request only while it stays strictly above
// status.capacity, and a lower request cancels the expansion in flight. So
// kubeplug lowers only a request it set itself (the host's record says so:
// lowering it recovers a failed expansion kubeplug asked for), and only
// strictly above the capacity; a request someone else set, by hand or at
// creation, is never lowered, as the user's expansion is the user's.
func claimShrink(have claimStorage, c *abi.ClaimApply) string {
	if c.Resources == nil {
		return ""
	}
	ask, ok := c.Resources.Requests[storageResource]
	if !ok || have.request == "" {
		return ""
	}
	askQ, err1 := resource.ParseQuantity(ask)
	curQ, err2 := resource.ParseQuantity(have.request)
	if err1 != nil || err2 != nil || askQ.Cmp(curQ) >= 0 {
		return ""
	}
	if !have.kubeplugSet() {
		return fmt.Sprintf("claim.resources.requests[storage] %s is lower than the claim's current request %s, which kubeplug did not set "+
			"(it is not annotation %s): kubeplug never shrinks a claim's request set by hand or at creation (it would cancel that expansion); ask for %s or more, or leave storage out",
			askQ.String(), curQ.String(), abi.AnnotationAppliedStorage, curQ.String())
	}
	capQ, err := resource.ParseQuantity(have.capacity)
	if have.capacity == "" || err != nil {
		return fmt.Sprintf("claim.resources.requests[storage] %s is lower than the claim's current request %s and the claim has no status.capacity: "+
			"the API server accepts a lower request only above the capacity; ask for %s or more, or leave storage out",
			askQ.String(), curQ.String(), curQ.String())
	}
	if askQ.Cmp(capQ) <= 0 {
		return fmt.Sprintf("claim.resources.requests[storage] %s lowers the claim's request %s to or below its status.capacity %s, which the API server refuses; "+
			"ask for more than %s (to recover a failed expansion), or leave storage out",
			askQ.String(), curQ.String(), capQ.String(), capQ.String())
	}
	return ""
}

// storageResource is the resource name of a claim's size.
const storageResource = "storage"

func checkQuantities(field string, l map[string]string) string {
	for name, q := range l {
		if _, err := resource.ParseQuantity(q); err != nil {
			return fmt.Sprintf("%s[%s] %q is not a quantity", field, name, q)
		}
	}
	return ""
}

func checkClaimUpdateStatus(s *abi.VolumeClaimUpdateStatus) string {
	if s == nil {
		return "claimUpdateStatus is missing"
	}
	for i, t := range s.VolumeClaimTemplates {
		if t.TemplateName == "" {
			return fmt.Sprintf("claimUpdateStatus.volumeClaimTemplates[%d].templateName is empty", i)
		}
		if why := checkQuantities(fmt.Sprintf("claimUpdateStatus.volumeClaimTemplates[%d].totalCapacity", i), t.TotalCapacity); why != "" {
			return why
		}
	}
	for _, p := range []struct {
		name string
		v    *int32
	}{{"heldPartition", s.HeldPartition}, {"userPartition", s.UserPartition}} {
		if p.v != nil && *p.v < 0 {
			return fmt.Sprintf("claimUpdateStatus.%s %d is negative", p.name, *p.v)
		}
	}
	for i, c := range s.Conditions {
		if c.Type == "" {
			return fmt.Sprintf("claimUpdateStatus.conditions[%d].type is empty", i)
		}
		if c.Status != "True" && c.Status != "False" && c.Status != "Unknown" {
			return fmt.Sprintf("claimUpdateStatus.conditions[%d].status %q is not True, False or Unknown", i, c.Status)
		}
		if c.LastTransitionTime != "" {
			if _, err := time.Parse(time.RFC3339, c.LastTransitionTime); err != nil {
				return fmt.Sprintf("claimUpdateStatus.conditions[%d].lastTransitionTime %q is not RFC 3339", i, c.LastTransitionTime)
			}
		}
	}
	return ""
}

func checkVolumeDelete(v *abi.VolumeDelete, t Target) string {
	if t.Kind != abi.KindPersistentVolume {
		return "deleteVolume applies only to a PersistentVolume"
	}
	if v == nil {
		return "volume is missing"
	}
	pv := t.Object.(*abi.PersistentVolume)
	csi, plugin := inputCSI(pv)
	if csi == nil {
		return fmt.Sprintf("the PersistentVolume is neither a CSI volume nor an in-tree volume that CSI migration covers (its source is %q)", pv.Spec.Source)
	}
	return volumeMismatch(v, csi, plugin != "")
}
