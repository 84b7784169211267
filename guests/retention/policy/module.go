package policy

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// ReasonConflictingController is the reason of the Warning event recorded on
// the StatefulSet when one of its claims has a controller other than the set
// or its pod, or a reference to an earlier set or pod of the same name. It is
// the reason kube-controller-manager uses, so that tooling that watches for
// it sees both.
const ReasonConflictingController = "ConflictingController"

// configSchema says the module takes no configuration: what to do is each
// StatefulSet's own retention policy. An empty object (or none) is accepted;
// any field is refused, so that a config meant for another module is
// reported rather than silently ignored.
const configSchema = `{
  "type": "object",
  "additionalProperties": false,
  "description": "retention takes no configuration: each StatefulSet's spec.persistentVolumeClaimRetentionPolicy says what to do"
}`

func init() {
	sdk.Register(sdk.Module{
		Name:         "retention",
		Version:      "0.1.0",
		Subject:      abi.SubjectStatefulSet,
		Description:  "Keeps the owner references of StatefulSet claims as persistentVolumeClaimRetentionPolicy asks (KEP-1847), as kube-controller-manager does.",
		ConfigSchema: configSchema,
		Capabilities: []abi.Capability{
			{Action: abi.ActionUpdateOwnerReferences, Resources: []string{"persistentvolumeclaims"}},
			{Action: abi.ActionEvent, Resources: []string{"statefulsets"}},
			// The admit hook adds the set's reference to a claim being
			// created (admit.go); the host holds what it adds to the
			// executor's owner-reference rule.
			{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}, Paths: []string{"/metadata/ownerReferences"}},
		},
		// What reconcile reads (ABI 1.3; a filter 1.5): the host sends
		// nothing else, and `kubeplug test` checks each answer against the
		// whole request.
		Projection: []abi.ObjectFields{
			{Kind: abi.KindStatefulSet, Fields: []string{"metadata.deletionTimestamp", "spec.replicas", "spec.ordinals",
				"spec.podManagementPolicy", "spec.minReadySeconds", "spec.volumeClaimTemplates.metadata.name",
				"spec.persistentVolumeClaimRetentionPolicy"}},
			// Of a pod's conditions, the Ready one readyCondition finds.
			{Kind: abi.KindPod, Fields: []string{"metadata.deletionTimestamp", "status.phase", "status.conditions[type=" + condReady + "].status",
				"status.conditions[type=" + condReady + "].lastTransitionTime"}},
			{Kind: abi.KindPersistentVolumeClaim, Fields: []string{"metadata.ownerReferences", "metadata.deletionTimestamp"}},
			// Neither is read: their objects are not sent at all.
			{Kind: abi.KindStorageClass, Omit: true},
			{Kind: abi.KindVolumeClaimUpdate, Omit: true},
		},
		Reconcile: reconcile,
		// The admit hook is sent whole objects.
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
	return stampClaim(req)
}
