package abi

//msgp:tag json
//msgp:clearomitted

// Action types (ActionTypes()). Adding one is a patch-level change of the
// ABI.
const (
	// ActionUpdateOwnerReferences removes owner references (by UID) from the
	// target, then adds OwnerReferences.Add, replacing any with the same UID.
	// An added reference may name only the request's StatefulSet or one of
	// its pods.
	ActionUpdateOwnerReferences = "updateOwnerReferences"
	// ActionAddFinalizer adds Finalizer to the target if it lacks it.
	ActionAddFinalizer = "addFinalizer"
	// ActionRemoveFinalizer removes Finalizer from the target if it has it.
	ActionRemoveFinalizer = "removeFinalizer"
	// ActionDeleteObject deletes the target.
	ActionDeleteObject = "deleteObject"
	// ActionApplyClaim server-side applies ClaimApply's fields to a claim
	// with kubeplug's field manager.
	ActionApplyClaim = "applyClaim"
	// ActionSetPartition sets a StatefulSet's rollingUpdate.partition and,
	// in the same write, the record of a hold (Action.Hold, ABI 1.4).
	ActionSetPartition = "setPartition"
	// ActionUpdateClaimUpdateStatus replaces a VolumeClaimUpdate's status.
	ActionUpdateClaimUpdateStatus = "updateClaimUpdateStatus"
	// ActionDeleteVolume deletes the backing volume of the target
	// PersistentVolume through its CSI driver's DeleteVolume. The host does
	// so only when its own read of the volume and its claim says
	// external-provisioner would (SPEC.md), with the secret it resolves.
	ActionDeleteVolume = "deleteVolume"
	// ActionEvent records a Kubernetes Event on the target.
	ActionEvent = "event"

	// The generic actions of a module that declares Watches (ABI 1.6), on
	// any declared kind. Each writes with the module's own field manager
	// and never touches metadata the host keeps (uid, resourceVersion,
	// owner references, finalizers, managedFields).

	// ActionApply server-side applies Object, a partial object of the
	// target's apiVersion and kind, to the target: the fields it sets, each
	// under a path a capability grants (Capability.Paths), become the
	// module's; a field the module applied before and leaves out is
	// removed. The target's uid and resourceVersion are preconditions; a
	// conflict with another field manager fails the action unless the
	// capability grants Force.
	ActionApply = "apply"
	// ActionCreate creates Object, an object of one of the declared
	// relations' resources, in the subject's namespace (none for a
	// cluster-scoped kind), with the subject as its controller owner.
	// Target names its kind, namespace and name (an empty name with
	// metadata.generateName set) and has no uid.
	ActionCreate = "create"
	// ActionApplyStatus server-side applies Object's status to the
	// subject's status subresource: Object holds the subject's apiVersion,
	// kind and status, nothing else.
	ActionApplyStatus = "applyStatus"
)

// ObjectRef names the object an action is about. It must be an object of the
// reconcile input, with the UID the input gave; the host supplies the
// resourceVersion precondition from the same input.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// Action is one thing a module asks the host to do. Type selects which of the
// optional fields is read.
type Action struct {
	Type   string    `json:"type"`
	Target ObjectRef `json:"target"`

	OwnerReferences *OwnerReferencesChange `json:"ownerReferences,omitempty"`
	Finalizer       string                 `json:"finalizer,omitempty"`
	Claim           *ClaimApply            `json:"claim,omitempty"`
	Partition       *int32                 `json:"partition,omitempty"`
	// Hold is setPartition's record on the StatefulSet (ABI 1.4): nil
	// removes it.
	Hold              *PartitionHold           `json:"hold,omitempty"`
	ClaimUpdateStatus *VolumeClaimUpdateStatus `json:"claimUpdateStatus,omitempty"`
	Volume            *VolumeDelete            `json:"volume,omitempty"`
	Event             *Event                   `json:"event,omitempty"`
	// Object is the object of apply, create and applyStatus (ABI 1.6), as
	// JSON.
	Object RawJSON `json:"object,omitempty"`
}

// OwnerReferencesChange is the payload of ActionUpdateOwnerReferences.
type OwnerReferencesChange struct {
	// Remove lists UIDs of owner references to drop.
	Remove []string `json:"remove,omitempty"`
	// Add lists references to add, replacing any with the same UID.
	Add []OwnerReference `json:"add,omitempty"`
}

// ClaimApply is the payload of ActionApplyClaim: the claim fields kubeplug
// owns. Unset fields are not applied.
type ClaimApply struct {
	Labels                    map[string]string     `json:"labels,omitempty"`
	Annotations               map[string]string     `json:"annotations,omitempty"`
	Resources                 *ResourceRequirements `json:"resources,omitempty"`
	VolumeAttributesClassName *string               `json:"volumeAttributesClassName,omitempty"`
}

// AnnotationAppliedStorage is the host's record of the storage request its
// applyClaim last set on a claim: the host writes it with every apply that
// carries a storage request, and refuses a module's apply that sets it. A
// claim whose spec.resources.requests.storage equals the record (by value)
// has the request kubeplug set; any other request was set by someone else,
// by hand or at creation, and an apply never lowers it (SPEC.md, applyClaim).
const AnnotationAppliedStorage = "kubeplug.dev/applied-storage"

// PartitionHold is what setPartition records on the StatefulSet with the
// partition (ABI 1.4), when a module holds rollingUpdate.partition for a
// reason of its own (templateupdate's LockStep): UserPartition is the value
// the user had set (nil: none), to be given back when the hold ends.
//
// The host writes the record as the set's annotations
// AnnotationHeldPartition (the partition this action sets) and
// AnnotationUserPartition (absent for none), in the same patch as the
// partition and under its preconditions: the record and the partition change
// together or not at all, and the record lives and goes with the set, not
// with whatever object asked for the hold. A setPartition without Hold
// removes both annotations. A module reads the record back with
// sdk.PartitionHoldOf; while the set's partition still equals
// AnnotationHeldPartition the hold is in place, and once it differs, someone
// else has set the partition since.
type PartitionHold struct {
	UserPartition *int32 `json:"userPartition,omitempty"`
}

// The annotations of a setPartition's hold (PartitionHold), written by the
// host.
const (
	AnnotationHeldPartition = "kubeplug.dev/held-partition"
	AnnotationUserPartition = "kubeplug.dev/user-partition"
)

// VolumeDelete is the payload of ActionDeleteVolume.
type VolumeDelete struct {
	Driver string `json:"driver"`
	// VolumeHandle is the PersistentVolume's spec.csi.volumeHandle; empty
	// for an in-tree volume that CSI migration covers, whose handle the host
	// translates from the in-tree source (Driver is then the driver the
	// source migrates to).
	VolumeHandle string `json:"volumeHandle"`
	// Secrets is ignored by the host, which logs a Warning when it is set.
	//
	// Deprecated: the host resolves the deletion secret itself, as
	// external-provisioner does, from the PV's deletion-secret annotations
	// or its StorageClass's provisioner-secret parameters: a module naming
	// the Secret handed to a storage driver could hand it any Secret.
	Secrets *SecretReference `json:"secrets,omitempty"`
}

// Event types.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// Event is the payload of ActionEvent.
type Event struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Result is a module's answer to one reconcile.
type Result struct {
	// Actions are carried out in order; the first that fails stops the
	// rest and the subject is reconciled again with backoff.
	Actions []Action `json:"actions,omitempty"`
	// RequeueAfterMillis asks for another reconcile after this many
	// milliseconds even if nothing changes; 0 means only on change.
	RequeueAfterMillis int64 `json:"requeueAfterMillis,omitempty"`
	// Message is a short summary for the host's log, optional.
	Message string `json:"message,omitempty"`
}

// Response is what every hook export returns: a status and, for StatusOK,
// the hook's result (Result for reconcile, Admit for admit).
type Response struct {
	Status  Status  `json:"status"`
	Message string  `json:"message,omitempty"`
	Result  *Result `json:"result,omitempty"`
	// Admit is the admit hook's answer (ABI 1.1); Result is unset then.
	Admit *AdmitResponse `json:"admit,omitempty"`
}
