package abi

import (
	"fmt"
	"maps"
	"slices"
)

//msgp:ignore Hook HookInfo HookForm HookRequest Subject SubjectInfo ActionType

// The contract as typed values. Every list of hooks, subjects and action
// types on either side (the host's hook table and load checks, the SDK's
// registration, the test harness's frames, the config parser's suggestions)
// derives from the descriptors below; each is unexported and reached through
// functions that return copies, so nothing outside this package can change
// what the ABI means (RATIONALE.md, "Why does abi own the tables?").
//
// The name constants (HookReconcile, SubjectStatefulSet, ActionEvent, ...)
// are untyped, so that they fit both the wire types' string fields and the
// typed values here.

// Hook names a hook, as in Manifest.Hooks.
type Hook string

// Hook names as they appear in Manifest.Hooks.
const (
	HookReconcile = "reconcile"
	HookAdmit     = "admit"
)

// HookInfo describes one hook.
type HookInfo struct {
	// Name is the hook's name in Manifest.Hooks.
	Name Hook
	// Export is the export that implements it in a native module; Extism
	// the Extism function in a plugin of the Extism profile.
	Export string
	Extism string
	// MinMinor is the ABI minor version that introduced it: a module built
	// for an older minor cannot declare it.
	MinMinor int
	// Form is the shape of its messages: which request it takes and which
	// answer it gives. Everything the host does per hook (the harness's
	// decoding, the runtime's answer check, the Extism JSON form) is keyed
	// by the form, so a hook of an existing form is a row of this table.
	Form HookForm
}

// HookForm is the shape of a hook's messages.
type HookForm int

// The hook forms.
const (
	// FormReconcile: a ReconcileRequest in, an answer in Response.Result.
	FormReconcile HookForm = iota
	// FormAdmit: an AdmitRequest in, an answer in Response.Admit.
	FormAdmit
)

// HookRequest is a hook's request: a *ReconcileRequest for FormReconcile,
// an *AdmitRequest for FormAdmit.
type HookRequest interface {
	MarshalMsg([]byte) ([]byte, error)
}

// DecodeRequest decodes an encoded request of form f.
func (f HookForm) DecodeRequest(b []byte) (HookRequest, error) {
	switch f {
	case FormReconcile:
		return DecodeReconcileRequest(b)
	case FormAdmit:
		return DecodeAdmitRequest(b)
	}
	return nil, fmt.Errorf("hook form %d is not one of ABI %v", f, Current)
}

// OK returns the ok response of form f that carries resp's answer, with
// the answer's default filled in: an empty Result for FormReconcile when
// resp holds none.
func (f HookForm) OK(resp *Response) *Response {
	ok := &Response{Status: StatusOK, Result: resp.Result, Admit: resp.Admit}
	if f == FormReconcile && ok.Result == nil {
		ok.Result = &Result{}
	}
	return ok
}

// hooks is the hook table. Its order is the hooks' number in a harness
// request frame (frame.go): a new hook goes at the end.
var hooks = [...]HookInfo{
	{Name: HookReconcile, Export: ExportReconcile, Extism: "reconcile", MinMinor: 0, Form: FormReconcile},
	{Name: HookAdmit, Export: ExportAdmit, Extism: "admit", MinMinor: 1, Form: FormAdmit},
}

// Hooks returns every hook this ABI version knows, in table order.
func Hooks() []HookInfo { return slices.Clone(hooks[:]) }

// Info returns h's descriptor; ok is false when h is not a hook of this ABI
// version.
func (h Hook) Info() (info HookInfo, ok bool) {
	i := h.Index()
	if i < 0 {
		return HookInfo{}, false
	}
	return hooks[i], true
}

// Index is h's position in Hooks() (its number in a harness frame), -1 when
// h is unknown.
func (h Hook) Index() int {
	for i := range hooks {
		if hooks[i].Name == h {
			return i
		}
	}
	return -1
}

// HookNames returns the names of every hook, sorted.
func HookNames() []string {
	names := make([]string, len(hooks))
	for i, h := range hooks {
		names[i] = string(h.Name)
	}
	slices.Sort(names)
	return names
}

// Subject names a subject kind, as in Manifest.Subject.
type Subject string

// Subject kinds: what one reconcile is about.
const (
	// SubjectStatefulSet: a StatefulSet with its pods, the claims its
	// templates name, their StorageClasses and its VolumeClaimUpdate.
	SubjectStatefulSet = "statefulset"
	// SubjectPersistentVolume: a PersistentVolume with its bound claim, its
	// StorageClass and the CSI drivers the host may act for.
	SubjectPersistentVolume = "persistentvolume"
)

// SubjectInfo describes one subject kind.
type SubjectInfo struct {
	// Name is the subject's name in Manifest.Subject.
	Name Subject
	// Kind is the subject object's kind (a key of Kinds()); its API group,
	// version and resource are KindOf(Kind)'s.
	Kind string
	// Related are the kinds of the other objects its reconcile input
	// carries, in the order ReconcileRequest's subject struct lists them.
	Related []string
}

// subjects is the subject table.
var subjects = [...]SubjectInfo{
	{Name: SubjectStatefulSet, Kind: KindStatefulSet, Related: []string{KindPod, KindPersistentVolumeClaim, KindStorageClass, KindVolumeClaimUpdate}},
	{Name: SubjectPersistentVolume, Kind: KindPersistentVolume, Related: []string{KindPersistentVolumeClaim, KindStorageClass}},
}

// Subjects returns the names of every subject kind this ABI version knows,
// in table order.
func Subjects() []string {
	names := make([]string, len(subjects))
	for i, s := range subjects {
		names[i] = string(s.Name)
	}
	return names
}

// Info returns s's descriptor; ok is false when s is not a subject kind of
// this ABI version.
func (s Subject) Info() (info SubjectInfo, ok bool) {
	for _, d := range subjects {
		if d.Name == s {
			d.Related = slices.Clone(d.Related)
			return d, true
		}
	}
	return SubjectInfo{}, false
}

// Namespaced reports whether subjects of kind s live in namespaces (and so
// whether a module entry's namespaces: applies to them).
func (s Subject) Namespaced() bool {
	info, ok := s.Info()
	return ok && KindOf(info.Kind).Namespaced
}

// Resource is the subject object's resource info: API version, resource,
// scope.
func (info SubjectInfo) Resource() KindInfo { return KindOf(info.Kind) }

// ActionType names an action type, as in Action.Type.
type ActionType string

// actionTypes lists every action type this ABI version knows. Adding one is
// a patch-level change of the ABI.
var actionTypes = [...]string{
	ActionUpdateOwnerReferences, ActionAddFinalizer, ActionRemoveFinalizer,
	ActionDeleteObject, ActionApplyClaim, ActionSetPartition,
	ActionUpdateClaimUpdateStatus, ActionDeleteVolume, ActionEvent,
	ActionApply, ActionCreate, ActionApplyStatus,
}

// GenericActions are the action types of a module that declares Watches:
// ActionApply, ActionCreate, ActionApplyStatus and the types that read no
// typed object (deleteObject, add/removeFinalizer, event). The others
// (applyClaim, setPartition, ...) belong to the built-in subjects.
func GenericActions() []string {
	return []string{ActionApply, ActionCreate, ActionApplyStatus, ActionDeleteObject, ActionAddFinalizer, ActionRemoveFinalizer, ActionEvent}
}

// ActionTypes returns every action type this ABI version knows.
func ActionTypes() []string { return slices.Clone(actionTypes[:]) }

// Known reports whether t is an action type of this ABI version.
func (t ActionType) Known() bool { return slices.Contains(actionTypes[:], string(t)) }

// CapabilityNames returns every action a capability may name: the action
// types and CapabilityMutate.
func CapabilityNames() []string { return append(ActionTypes(), CapabilityMutate) }

// Kinds a target may name, with their API versions and resources.
const (
	KindStatefulSet           = "StatefulSet"
	KindPod                   = "Pod"
	KindPersistentVolumeClaim = "PersistentVolumeClaim"
	KindPersistentVolume      = "PersistentVolume"
	KindStorageClass          = "StorageClass"
	KindVolumeClaimUpdate     = "VolumeClaimUpdate"
)

// KindInfo is what the host needs to address a kind.
type KindInfo struct {
	APIVersion string
	Resource   string
	Namespaced bool
}

// kinds maps each kind a reconcile input can hold to its API version and
// resource.
var kinds = map[string]KindInfo{
	KindStatefulSet:           {"apps/v1", "statefulsets", true},
	KindPod:                   {"v1", "pods", true},
	KindPersistentVolumeClaim: {"v1", "persistentvolumeclaims", true},
	KindPersistentVolume:      {"v1", "persistentvolumes", false},
	KindStorageClass:          {"storage.k8s.io/v1", "storageclasses", false},
	KindVolumeClaimUpdate:     {"kubeplug.dev/v1alpha1", "volumeclaimupdates", true},
}

// LookupKind returns kind's API version and resource; ok is false when a
// reconcile input cannot hold the kind.
func LookupKind(kind string) (info KindInfo, ok bool) {
	info, ok = kinds[kind]
	return info, ok
}

// KindOf is LookupKind without ok: the zero KindInfo for an unknown kind.
func KindOf(kind string) KindInfo { return kinds[kind] }

// Kinds returns a copy of the kind table: every kind a reconcile input can
// hold, with its API version and resource.
func Kinds() map[string]KindInfo { return maps.Clone(kinds) }
