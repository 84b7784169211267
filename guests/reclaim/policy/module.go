package policy

import (
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// Finalizers the module manages, with the names upstream gives them.
const (
	// FinalizerExternal is external-provisioner's PVDeletionProtectionFinalizer.
	FinalizerExternal = "external-provisioner.volume.kubernetes.io/finalizer"
	// FinalizerInTree is the in-tree PV controller's
	// PVDeletionInTreeProtectionFinalizer.
	FinalizerInTree = "kubernetes.io/pv-controller"
)

// Annotations the module reads.
const (
	// AnnProvisionedBy names the provisioner of a dynamically provisioned PV;
	// a PV without it was provisioned statically.
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// AnnMigratedTo names the CSI driver an in-tree PV is migrated to; the
	// PV controller sets it exactly when CSI migration is on for the PV's
	// plugin.
	AnnMigratedTo = "pv.kubernetes.io/migrated-to"
	// AnnBetaStorageClass is the PV's class before spec.storageClassName
	// existed; when set it wins, as in upstream's GetPersistentVolumeClass.
	AnnBetaStorageClass = "volume.beta.kubernetes.io/storage-class"
	// AnnDeletionSecretName and AnnDeletionSecretNamespace, when both are
	// set on a PV, name the secret for DeleteVolume instead of the
	// StorageClass (external-provisioner records them at provisioning).
	AnnDeletionSecretName      = "volume.kubernetes.io/provisioner-deletion-secret-name"
	AnnDeletionSecretNamespace = "volume.kubernetes.io/provisioner-deletion-secret-namespace"
)

// Event reasons.
const (
	// ReasonVolumeDeleted (Normal): the driver deleted the backing volume.
	ReasonVolumeDeleted = "VolumeDeleted"
	// ReasonVolumeFailedDelete (Warning): the module cannot ask for the
	// deletion; external-provisioner uses the same reason.
	ReasonVolumeFailedDelete = "VolumeFailedDelete"
)

// RetryAfter is how soon the module asks to look at a volume again after it
// asked for its deletion or could not: if the deletion failed, the PV and
// its finalizer are still there and the next reconcile asks again.
const RetryAfter = 30 * time.Second

// Reclaim policies and phases of a PersistentVolume.
const (
	policyDelete  = "Delete"
	policyRetain  = "Retain"
	policyRecycle = "Recycle"

	phaseBound    = "Bound"
	phaseReleased = "Released"
)

const configSchema = `{
  "type": "object",
  "additionalProperties": false,
  "description": "reclaim takes no configuration: the CSI drivers it deletes volumes through are the host's configured drivers"
}`

var resource = abi.KindOf(abi.KindPersistentVolume).Resource

func init() {
	sdk.Register(sdk.Module{
		Name:    "reclaim",
		Version: "0.1.0",
		Subject: abi.SubjectPersistentVolume,
		Description: "Honors the PersistentVolume reclaim policy (KEP-2644): keeps deletion-protection finalizers on PersistentVolumes " +
			"and deletes the backing volume of released Delete-policy CSI volumes before the PersistentVolume goes, so none leaks.",
		ConfigSchema: configSchema,
		Capabilities: []abi.Capability{
			{Action: abi.ActionAddFinalizer, Resources: []string{resource}},
			{Action: abi.ActionRemoveFinalizer, Resources: []string{resource}},
			{Action: abi.ActionDeleteObject, Resources: []string{resource}},
			{Action: abi.ActionDeleteVolume},
			{Action: abi.ActionEvent, Resources: []string{resource}},
		},
		// What reconcile reads (ABI 1.3; keys 1.5): the host sends nothing
		// else, and `kubeplug test` checks each answer against the whole
		// request.
		Projection: []abi.ObjectFields{
			// Of claimRef and csi only the fields the rules read: not csi's
			// volumeAttributes map, a map being the dearest thing to encode and
			// decode (BENCHMARKS.md, "Issue 26: retention and reclaim"). For
			// the same reason, of the annotations and the class's parameters
			// only the keys the rules read: a PV's annotations hold whatever
			// its provisioner and its users put there.
			{Kind: abi.KindPersistentVolume, Fields: []string{"metadata.annotations[" + AnnProvisionedBy + "]",
				"metadata.annotations[" + AnnMigratedTo + "]", "metadata.annotations[" + AnnBetaStorageClass + "]",
				"metadata.annotations[" + AnnDeletionSecretName + "]", "metadata.annotations[" + AnnDeletionSecretNamespace + "]",
				"metadata.finalizers", "metadata.deletionTimestamp",
				"spec.claimRef.namespace", "spec.claimRef.name", "spec.claimRef.uid", "spec.persistentVolumeReclaimPolicy",
				"spec.storageClassName", "spec.source", "spec.csi.driver", "spec.csi.volumeHandle", "status.phase"}},
			{Kind: abi.KindPersistentVolumeClaim},
			{Kind: abi.KindStorageClass, Fields: []string{"parameters[" + ParamProvisionerSecretName + "]", "parameters[" + ParamProvisionerSecretNamespace + "]",
				"parameters[" + ParamDeprecatedSecretName + "]", "parameters[" + ParamDeprecatedSecretNamespace + "]",
				"parameters[" + ParamDefaultSecretName + "]", "parameters[" + ParamDefaultSecretNamespace + "]"}},
		},
		Reconcile: reconcile,
	})
}

func reconcile(req *sdk.Request) (sdk.Result, error) {
	// The module takes no configuration; decoding into an empty struct
	// reports any field an operator sets by mistake.
	var cfg struct{}
	if err := req.Config(&cfg); err != nil {
		return sdk.Result{}, err
	}
	pv := req.PersistentVolume()
	if pv == nil {
		return sdk.Result{}, nil
	}
	v := newVolume(pv, req.BoundClaim(), req.Drivers())
	v.class = req.StorageClass(v.className())

	p := newPlan(pv)
	switch v.kind {
	case kindCSI:
		reconcileCSI(v, p)
	case kindInTree:
		reconcileInTree(v, p)
	case kindMigrated:
		reconcileCSI(v, p)
	case kindForeign:
		// Another provisioner's volume: its finalizers and its deletion
		// are that provisioner's business.
	}
	return p.result(), nil
}
