package actions

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
)

// FieldManager is the field manager of every write the executor makes.
const FieldManager = "kubeplug"

type writeKind int

const (
	writePatch writeKind = iota
	writeDelete
	writeDeleteVolume
	writeEvent
	// writeApply is a generic apply or applyStatus (Cluster.Apply),
	// writeCreate a generic create (Cluster.Create).
	writeApply
	writeCreate
)

// write is one call the executor makes for an action.
type write struct {
	kind        writeKind
	patchType   types.PatchType
	subresource string
	data        []byte
	// commit records the effect of the write on the object's state once it
	// is made (or, in shadow mode, would have been); nil when none.
	commit func(*objectState)
	// desc says what the call is, for logs and reports.
	desc string
	// fieldManager and force are a generic write's: the module's own
	// manager, and whether its grant lets the apply take fields another
	// manager owns.
	fieldManager string
	force        bool
}

// plan returns the call that carries out a on t, whose current state is st,
// or nil when the object already is as a asks. a has passed Validate.
// Owner reference and finalizer actions are planned by batch, one write per
// object.
func plan(a abi.Action, t Target, st *objectState) (*write, error) {
	switch a.Type {
	case abi.ActionDeleteObject:
		if st.deleting {
			return nil, nil
		}
		return &write{kind: writeDelete, desc: fmt.Sprintf("delete with preconditions uid=%s resourceVersion=%s", t.UID, st.rv)}, nil
	case abi.ActionApplyClaim:
		return planApplyClaim(a.Claim, t, st)
	case abi.ActionSetPartition:
		return planSetPartition(*a.Partition, a.Hold, t, st)
	case abi.ActionUpdateClaimUpdateStatus:
		return planClaimUpdateStatus(a.ClaimUpdateStatus, t, st)
	case abi.ActionDeleteVolume:
		v := a.Volume
		desc := fmt.Sprintf("CSI DeleteVolume driver=%s volumeHandle=%s", v.Driver, v.VolumeHandle)
		if v.VolumeHandle == "" {
			desc = fmt.Sprintf("CSI DeleteVolume driver=%s of the PersistentVolume's in-tree source, translated", v.Driver)
		}
		return &write{kind: writeDeleteVolume, desc: desc}, nil
	case abi.ActionEvent:
		return &write{kind: writeEvent, desc: fmt.Sprintf("event %s %s: %s", a.Event.Type, a.Event.Reason, truncate(a.Event.Message, MaxEventMessage))}, nil
	}
	return nil, fmt.Errorf("no write for action type %q", a.Type)
}

// metaPatch is the metadata of a JSON merge patch. UID and ResourceVersion
// are preconditions: the API server refuses the patch with a conflict when
// the object's differ. A nil list pointer leaves the list alone; a pointer
// to a nil list removes it. Annotations merge: a nil value removes the key.
type metaPatch struct {
	UID             string                `json:"uid"`
	ResourceVersion string                `json:"resourceVersion,omitempty"`
	OwnerReferences *[]abi.OwnerReference `json:"ownerReferences,omitempty"`
	Finalizers      *[]string             `json:"finalizers,omitempty"`
	Annotations     map[string]*string    `json:"annotations,omitempty"`
}

// planSetPartition sets a StatefulSet's partition and, in the same merge
// patch under the same preconditions, its record of a hold (hold, nil for
// none: abi.PartitionHold), sending only what differs from st.
func planSetPartition(p int32, hold *abi.PartitionHold, t Target, st *objectState) (*write, error) {
	want := map[string]string{}
	if hold != nil {
		want[abi.AnnotationHeldPartition] = strconv.Itoa(int(p))
		if u := hold.UserPartition; u != nil {
			want[abi.AnnotationUserPartition] = strconv.Itoa(int(*u))
		}
	}
	var annotations map[string]*string
	for _, k := range []string{abi.AnnotationHeldPartition, abi.AnnotationUserPartition} {
		v, ok := want[k]
		if old, had := st.hold[k]; ok == had && v == old {
			continue
		}
		if annotations == nil {
			annotations = map[string]*string{}
		}
		annotations[k] = nil
		if ok {
			annotations[k] = &v
		}
	}
	if p == st.partition && annotations == nil {
		return nil, nil
	}
	var spec any
	if p != st.partition {
		spec = map[string]any{"updateStrategy": map[string]any{"rollingUpdate": map[string]any{"partition": p}}}
	}
	return mergePatch(metaPatch{UID: t.UID, ResourceVersion: st.rv, Annotations: annotations}, spec, nil, func(st *objectState) {
		st.partition, st.hold = p, want
	})
}

// holdAnnotations are the annotations of a hold's record that a has.
func holdAnnotations(a map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range []string{abi.AnnotationHeldPartition, abi.AnnotationUserPartition} {
		if v, ok := a[k]; ok {
			out[k] = v
		}
	}
	return out
}

// mergePatch builds a JSON merge patch of meta and, when not nil, spec or
// status; a status patch goes to the status subresource.
func mergePatch(meta metaPatch, spec, status any, commit func(*objectState)) (*write, error) {
	body := struct {
		Metadata metaPatch `json:"metadata"`
		Spec     any       `json:"spec,omitempty"`
		Status   any       `json:"status,omitempty"`
	}{Metadata: meta, Spec: spec, Status: status}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode merge patch: %w", err)
	}
	w := &write{kind: writePatch, patchType: types.MergePatchType, data: data, commit: commit, desc: "merge patch " + string(data)}
	if body.Status != nil {
		w.subresource = "status"
		w.desc = "merge patch of status " + string(data)
	}
	return w, nil
}

// planApplyClaim server-side applies c's fields. It sends nothing when every
// field c sets already has that value on the claim. That check looks only at
// values: a field kubeplug applied before and c now omits is not removed
// until some other field changes and an apply is sent.
func planApplyClaim(c *abi.ClaimApply, t Target, st *objectState) (*write, error) {
	// Validate compared the request with the input's; an earlier apply of
	// this Result may have changed it since.
	if why := claimShrink(st.claimStorage, c); why != "" {
		return nil, refusal(abi.Action{Type: abi.ActionApplyClaim}, t, why+" (an earlier action of this result changed it)")
	}
	// The host's record of the request it applies goes with every apply
	// that carries one; the field manager owns it, so an apply without a
	// request removes it, as it gives up the request too.
	storage := ""
	if c.Resources != nil && c.Resources.Requests[storageResource] != "" {
		storage = canonicalQuantities(map[string]string{storageResource: c.Resources.Requests[storageResource]})[storageResource]
		withRecord := *c
		withRecord.Annotations = maps.Clone(c.Annotations)
		if withRecord.Annotations == nil {
			withRecord.Annotations = map[string]string{}
		}
		withRecord.Annotations[abi.AnnotationAppliedStorage] = storage
		c = &withRecord
	}
	if !st.applied && claimHas(t.Object.(*abi.PersistentVolumeClaim), c) {
		return nil, nil
	}
	type meta struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		UID             string            `json:"uid"`
		ResourceVersion string            `json:"resourceVersion,omitempty"`
		Labels          map[string]string `json:"labels,omitempty"`
		Annotations     map[string]string `json:"annotations,omitempty"`
	}
	type spec struct {
		Resources                 *abi.ResourceRequirements `json:"resources,omitempty"`
		VolumeAttributesClassName *string                   `json:"volumeAttributesClassName,omitempty"`
	}
	body := struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   meta   `json:"metadata"`
		Spec       *spec  `json:"spec,omitempty"`
	}{
		APIVersion: abi.KindOf(abi.KindPersistentVolumeClaim).APIVersion,
		Kind:       abi.KindPersistentVolumeClaim,
		Metadata: meta{
			Name: t.Name, Namespace: t.Namespace, UID: t.UID, ResourceVersion: st.rv,
			Labels: c.Labels, Annotations: c.Annotations,
		},
	}
	if c.Resources != nil || c.VolumeAttributesClassName != nil {
		body.Spec = &spec{VolumeAttributesClassName: c.VolumeAttributesClassName}
		if c.Resources != nil {
			body.Spec.Resources = &abi.ResourceRequirements{
				Requests: canonicalQuantities(c.Resources.Requests),
				Limits:   canonicalQuantities(c.Resources.Limits),
			}
		}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode apply patch: %w", err)
	}
	return &write{
		kind: writePatch, patchType: types.ApplyPatchType, data: data,
		commit: func(st *objectState) {
			st.applied = true
			if storage != "" {
				st.claimStorage.request, st.claimStorage.record = storage, storage
			}
		},
		desc: "apply patch " + string(data),
	}, nil
}

// claimHas reports whether every field c sets has that value on claim.
// Quantities compare by value, so "1024Mi" matches "1Gi".
func claimHas(claim *abi.PersistentVolumeClaim, c *abi.ClaimApply) bool {
	for k, v := range c.Labels {
		if x, ok := claim.Metadata.Labels[k]; !ok || x != v {
			return false
		}
	}
	for k, v := range c.Annotations {
		if x, ok := claim.Metadata.Annotations[k]; !ok || x != v {
			return false
		}
	}
	if r := c.Resources; r != nil {
		if !hasQuantities(claim.Spec.Resources.Requests, r.Requests) || !hasQuantities(claim.Spec.Resources.Limits, r.Limits) {
			return false
		}
	}
	if v := c.VolumeAttributesClassName; v != nil {
		if x := claim.Spec.VolumeAttributesClassName; x == nil || *x != *v {
			return false
		}
	}
	return true
}

// hasQuantities reports whether have holds every quantity of want, by value.
func hasQuantities(have, want map[string]string) bool {
	for name, w := range want {
		h, ok := have[name]
		if !ok {
			return false
		}
		hq, err1 := resource.ParseQuantity(h)
		wq, err2 := resource.ParseQuantity(w)
		if err1 != nil || err2 != nil || hq.Cmp(wq) != 0 {
			return false
		}
	}
	return true
}

// canonicalQuantities renders each quantity the way the API server and the
// snapshot projection do ("1024Mi" as "1Gi"). Unparsable ones are kept;
// Validate has refused them already.
func canonicalQuantities(l map[string]string) map[string]string {
	if l == nil {
		return nil
	}
	out := make(map[string]string, len(l))
	for name, s := range l {
		if q, err := resource.ParseQuantity(s); err == nil {
			s = q.String()
		}
		out[name] = s
	}
	return out
}

// planClaimUpdateStatus replaces a VolumeClaimUpdate's status through a
// merge patch on the status subresource. A merge patch merges maps, so every
// status field is written explicitly, lists as null when empty, to replace
// rather than merge. Quantities and timestamps are first put in the form the
// snapshot projects them in, so that a status written once compares equal on
// the next reconcile and steady state makes no write.
func planClaimUpdateStatus(s *abi.VolumeClaimUpdateStatus, t Target, st *objectState) (*write, error) {
	next := canonicalStatus(s)
	if st.status != nil && sameStatus(*st.status, next) {
		return nil, nil
	}
	status := map[string]any{
		"observedGeneration":   next.ObservedGeneration,
		"volumeClaimTemplates": next.VolumeClaimTemplates,
		"conditions":           next.Conditions,
		"heldPartition":        next.HeldPartition,
		"userPartition":        next.UserPartition,
	}
	return mergePatch(metaPatch{UID: t.UID, ResourceVersion: st.rv}, nil, status, func(st *objectState) {
		st.status = &next
	})
}

func canonicalStatus(s *abi.VolumeClaimUpdateStatus) abi.VolumeClaimUpdateStatus {
	out := abi.VolumeClaimUpdateStatus{ObservedGeneration: s.ObservedGeneration, HeldPartition: s.HeldPartition, UserPartition: s.UserPartition}
	if len(s.VolumeClaimTemplates) > 0 {
		out.VolumeClaimTemplates = make([]abi.VolumeClaimTemplateStatus, len(s.VolumeClaimTemplates))
		for i, t := range s.VolumeClaimTemplates {
			t.TotalCapacity = canonicalQuantities(t.TotalCapacity)
			out.VolumeClaimTemplates[i] = t
		}
	}
	if len(s.Conditions) > 0 {
		out.Conditions = make([]abi.Condition, len(s.Conditions))
		for i, c := range s.Conditions {
			if ts, err := time.Parse(time.RFC3339, c.LastTransitionTime); err == nil {
				c.LastTransitionTime = ts.UTC().Format(time.RFC3339)
			}
			out.Conditions[i] = c
		}
	}
	return out
}

// sameStatus compares through JSON, where an empty list or map and an
// absent one are alike, as they are to the API server.
func sameStatus(a, b abi.VolumeClaimUpdateStatus) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// MaxEventMessage is the length in bytes an event's message is cut to, the
// limit events.k8s.io/v1 sets on an event's note. A longer message is
// truncated, not refused: a message says what happened, and refusing it
// would stop the actions after it for a string no one may read whole.
const MaxEventMessage = 1024

// truncate cuts s to at most n bytes, at a rune boundary, so that the cut
// leaves valid UTF-8.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
