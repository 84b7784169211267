package policy

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// Event and condition reasons. Tests and users match these exact strings.
const (
	ReasonClaimUpdating                     = "ClaimUpdating"
	ReasonPartitionHeld                     = "PartitionHeld"
	ReasonPartitionReleased                 = "PartitionReleased"
	ReasonStorageClassDoesNotAllowExpansion = "StorageClassDoesNotAllowExpansion"
	ReasonImmutableFieldChanged             = "ImmutableFieldChanged"
	ReasonClaimUpdateFailed                 = "ClaimUpdateFailed"
	ReasonClaimNeedsRecreation              = "ClaimNeedsRecreation"
	ReasonUnknownTemplate                   = "UnknownTemplate"
	ReasonNotInEffect                       = "NotInEffect"

	ReasonComplete                  = "Complete"
	ReasonClaimsUpdating            = "ClaimsUpdating"
	ReasonWaitingForPodRollout      = "WaitingForPodRollout"
	ReasonWaitingForReplicaReady    = "WaitingForReplicaReady"
	ReasonClaimsRecreating          = "ClaimsRecreating"
	ReasonWaitingForPodDeletion     = "WaitingForPodDeletion"
	ReasonWaitingForClaimRecreation = "WaitingForClaimRecreation"
	ReasonBlocked                   = "Blocked"
	ReasonNotBlocked                = "NotBlocked"
)

// Condition types of a VolumeClaimUpdate's status.
const (
	ConditionProgressing = "Progressing"
	ConditionBlocked     = "Blocked"
)

// Values of the VolumeClaimUpdate's strategies (KEP-4650 "Kubernetes API
// Changes"); the CRD defaults them to OnDelete and Async.
const (
	updateInPlace = "InPlace"
	syncLockStep  = "LockStep"
)

// configSchema says the module takes no configuration: each
// VolumeClaimUpdate says what to do for its set.
const configSchema = `{
  "type": "object",
  "additionalProperties": false,
  "description": "templateupdate takes no configuration: each VolumeClaimUpdate says what to do for its StatefulSet"
}`

func init() {
	sdk.Register(sdk.Module{
		Name:         "templateupdate",
		Version:      "0.1.0",
		Subject:      abi.SubjectStatefulSet,
		Description:  "Makes a StatefulSet's claims follow the volume claim templates of its VolumeClaimUpdate (KEP-4650): in-place updates in rollout order, LockStep with the pod rollout, new claims rewritten on creation.",
		ConfigSchema: configSchema,
		Capabilities: []abi.Capability{
			{Action: abi.ActionApplyClaim, Resources: []string{"persistentvolumeclaims"}},
			{Action: abi.ActionSetPartition, Resources: []string{"statefulsets"}},
			{Action: abi.ActionUpdateClaimUpdateStatus, Resources: []string{"volumeclaimupdates"}},
			{Action: abi.ActionEvent, Resources: []string{"persistentvolumeclaims", "volumeclaimupdates", "statefulsets"}},
			{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}, Paths: []string{
				"/metadata/labels", "/metadata/annotations", "/spec/accessModes", "/spec/storageClassName",
				"/spec/resources", "/spec/volumeMode", "/spec/volumeAttributesClassName",
			}},
		},
		Reconcile: reconcile,
		// What reconcile reads (ABI 1.3; keys and filters 1.5): the host
		// sends nothing else, and `kubeplug test` checks each answer against
		// the whole request. The admit hook is sent whole objects.
		Projection: []abi.ObjectFields{
			// Of the set's annotations, the record of a LockStep hold
			// (sdk.PartitionHoldOf).
			{Kind: abi.KindStatefulSet, Fields: []string{"metadata.annotations[" + abi.AnnotationHeldPartition + "]",
				"metadata.annotations[" + abi.AnnotationUserPartition + "]", "metadata.generation", "spec.replicas", "spec.ordinals", "spec.updateStrategy",
				"spec.podManagementPolicy", "spec.volumeClaimTemplates.metadata.name", "spec.minReadySeconds", "status.observedGeneration", "status.updateRevision"}},
			// Of a pod, the revision label podRolled compares and what
			// readyCondition and podAvailable read of the Ready condition:
			// the other labels and conditions were most of the input.
			{Kind: abi.KindPod, Fields: []string{"metadata.labels[controller-revision-hash]", "metadata.deletionTimestamp",
				"status.conditions[type=Ready].status", "status.conditions[type=Ready].lastTransitionTime"}},
			// A claim's labels and annotations are compared with a template's,
			// whose keys are the user's: whole. Of its maps of quantities the
			// storage alone, but the capacity, which the status totals; of its
			// conditions, the failures failed reports.
			{Kind: abi.KindPersistentVolumeClaim, Fields: []string{"metadata.labels", "metadata.annotations", "metadata.deletionTimestamp",
				"spec.accessModes", "spec.resources.requests[storage]", "spec.storageClassName", "spec.volumeMode", "spec.volumeAttributesClassName",
				"status.phase", "status.capacity", "status.conditions[type=ControllerResizeError].status",
				"status.conditions[type=NodeResizeError].status", "status.conditions[type=ModifyVolumeError].status",
				"status.allocatedResources[storage]", "status.allocatedResourceStatuses[storage]", "status.currentVolumeAttributesClassName"}},
			{Kind: abi.KindStorageClass, Fields: []string{"allowVolumeExpansion"}},
			{Kind: abi.KindVolumeClaimUpdate, Fields: []string{"metadata.generation", "metadata.deletionTimestamp", "spec", "status"}},
		},
		Admit: admit,
		Admission: &abi.Admission{
			Mutates: true,
			Rules: []abi.AdmissionRule{
				{Operations: []string{abi.OperationCreate}, APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims"}},
			},
		},
	})
}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	var none struct{}
	if err := req.Config(&none); err != nil {
		return sdk.Result{}, err
	}
	actions, requeue := decide(req)
	return sdk.Result{Actions: actions, RequeueAfter: requeue}, nil
}

func admit(req *abi.AdmitRequest) (sdk.Admission, error) {
	var none struct{}
	if err := sdk.AdmitConfig(req, &none); err != nil {
		return sdk.Admission{}, err
	}
	return rewriteClaim(req)
}
