package abi

//msgp:tag json
//msgp:clearomitted

// Admission operations, as the API server names them.
const (
	OperationCreate  = "CREATE"
	OperationUpdate  = "UPDATE"
	OperationDelete  = "DELETE"
	OperationConnect = "CONNECT"
)

// CapabilityMutate is the capability an admit hook needs to answer with a
// patch: Resources names what it may patch and Paths the JSON Pointer
// prefixes of the fields it may touch ("/metadata/labels", "/spec/resources").
// It is a capability, not an action: a reconcile result cannot carry it.
const CapabilityMutate = "mutate"

// Admission is what a module with the admit hook admits, in its manifest.
// The host turns it into the rules of a webhook configuration.
type Admission struct {
	// Rules say which requests the API server sends to the module.
	Rules []AdmissionRule `json:"rules"`
	// Mutates says whether the module may answer with a patch: it is then
	// registered as a mutating webhook, otherwise as a validating one.
	Mutates bool `json:"mutates,omitempty"`
	// MatchConditions are CEL expressions that narrow the requests further,
	// as in admissionregistration.k8s.io/v1 (at most 64).
	MatchConditions []MatchCondition `json:"matchConditions,omitempty"`
}

// AdmissionRule is admissionregistration.k8s.io/v1 RuleWithOperations.
type AdmissionRule struct {
	// Operations are OperationCreate, OperationUpdate, OperationDelete,
	// OperationConnect or "*".
	Operations []string `json:"operations"`
	// APIGroups ("" for the core group), APIVersions and Resources
	// ("persistentvolumeclaims") select the objects.
	APIGroups   []string `json:"apiGroups"`
	APIVersions []string `json:"apiVersions"`
	Resources   []string `json:"resources"`
	// Scope is "Cluster", "Namespaced" or "*" (the default).
	Scope string `json:"scope,omitempty"`
}

// MatchCondition is admissionregistration.k8s.io/v1 MatchCondition.
type MatchCondition struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// GroupVersionKind names a kind.
type GroupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// GroupVersionResource names a resource.
type GroupVersionResource struct {
	Group    string `json:"group"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
}

// UserInfo is authentication/v1 UserInfo of the request's author.
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// AdmitObject is an object of an admission request: its projection in the
// wire type of its kind (the one field matching Kind is set, none for a
// kind the ABI does not project) and the object as the API server sent it,
// as JSON, which is what a patch applies to.
type AdmitObject struct {
	Kind                  string                 `json:"kind"`
	StatefulSet           *StatefulSet           `json:"statefulSet,omitempty"`
	Pod                   *Pod                   `json:"pod,omitempty"`
	PersistentVolumeClaim *PersistentVolumeClaim `json:"persistentVolumeClaim,omitempty"`
	PersistentVolume      *PersistentVolume      `json:"persistentVolume,omitempty"`
	StorageClass          *StorageClass          `json:"storageClass,omitempty"`
	VolumeClaimUpdate     *VolumeClaimUpdate     `json:"volumeClaimUpdate,omitempty"`
	// JSON is the whole object as the API server sent it, without
	// metadata.managedFields (the API server's record of field ownership,
	// which the host leaves out: it is often most of an object's bytes).
	JSON []byte `json:"json,omitempty"`
}

// AdmitRequest is the input of the admit hook: one admission request and
// the objects the host's caches hold that relate to it.
type AdmitRequest struct {
	// UID identifies the request (the AdmissionReview's).
	UID string `json:"uid"`
	// Operation is one of the Operation constants.
	Operation string               `json:"operation"`
	Kind      GroupVersionKind     `json:"kind"`
	Resource  GroupVersionResource `json:"resource"`
	// SubResource is set for requests on a subresource ("status", "scale").
	SubResource string `json:"subResource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	// Name may be empty on CREATE when the object asks for generateName.
	Name string `json:"name,omitempty"`
	// Object is the new object (nil on DELETE); OldObject the existing one
	// (nil on CREATE).
	Object    *AdmitObject `json:"object,omitempty"`
	OldObject *AdmitObject `json:"oldObject,omitempty"`
	UserInfo  UserInfo     `json:"userInfo"`
	// DryRun: nothing of the request is persisted; a module with side
	// effects must not have them (modules have none).
	DryRun bool `json:"dryRun,omitempty"`
	// NamespaceLabels are the labels of the request's namespace, from the
	// host's cache; nil for cluster-scoped objects or when unknown.
	NamespaceLabels map[string]string `json:"namespaceLabels,omitempty"`
	// Now is the host's clock, RFC 3339 with nanoseconds, UTC.
	Now string `json:"now"`
	// Config is the module's configuration as JSON, empty if none.
	Config []byte `json:"config,omitempty"`
	// StatefulSet is, for a statefulset module, the state of the
	// StatefulSet the object belongs to, as a reconcile would see it: the
	// set itself for a StatefulSet, the set whose template names a claim
	// ("<template>-<set>-<ordinal>") or owns a pod. The object under
	// admission is not in it when it is being created. Nil when the object
	// belongs to no set the host knows.
	StatefulSet *StatefulSetSubject `json:"statefulSet,omitempty"`
}

// Patch operations (RFC 6902).
const (
	PatchAdd     = "add"
	PatchRemove  = "remove"
	PatchReplace = "replace"
	PatchMove    = "move"
	PatchCopy    = "copy"
	PatchTest    = "test"
)

// PatchOperation is one RFC 6902 JSON Patch operation on AdmitObject.JSON.
// Value is the operation's value as JSON (for add, replace and test).
type PatchOperation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from,omitempty"`
	Value []byte `json:"value,omitempty"`
}

// AdmitResponse is a module's answer to one admission request.
type AdmitResponse struct {
	Allowed bool `json:"allowed"`
	// Message says why a request is denied; the API server shows it to
	// the user.
	Message string `json:"message,omitempty"`
	// Reason is a metav1.StatusReason for a denial ("Forbidden", "Invalid");
	// Code its HTTP code (default 403).
	Reason string `json:"reason,omitempty"`
	Code   int32  `json:"code,omitempty"`
	// Warnings are shown to the user whatever the answer.
	Warnings []string `json:"warnings,omitempty"`
	// Patch mutates the object of an allowed request; it needs
	// CapabilityMutate for the request's resource and every path it touches.
	Patch []PatchOperation `json:"patch,omitempty"`
}

// AllowsPatch reports whether c is a CapabilityMutate that lets a patch
// touch path (a JSON Pointer) on resource r: one of c.Paths is "*", path
// itself, or a prefix of it ending at a segment boundary.
func (c Capability) AllowsPatch(r, path string) bool { return c.AllowsPath(CapabilityMutate, r, path) }

// AllowsPath reports whether c lets action (CapabilityMutate, ActionApply)
// on resource r touch the JSON Pointer path: c names the action and the
// resource, and one of its Paths is "*", path itself, or a prefix of it
// ending at a "/".
func (c Capability) AllowsPath(action, r, path string) bool {
	return c.Allows(action, r) && pathCovered(c.Paths, path)
}

// pathCovered reports whether one of paths is "*", path itself, or a
// prefix of it ending at a "/".
func pathCovered(paths []string, path string) bool {
	for _, p := range paths {
		if p == "*" || p == path || len(path) > len(p) && path[:len(p)] == p && path[len(p)] == '/' {
			return true
		}
	}
	return false
}
