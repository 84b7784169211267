package policy

import (
	"slices"
	"strings"

	"github.com/kubeplug/kubeplug/abi"
)

// kind says which rules apply to a PersistentVolume.
type kind int

const (
	// kindForeign: a volume the module leaves alone, because another
	// provisioner owns it (a CSI driver the host is not configured for, or
	// an external provisioner that is not CSI).
	kindForeign kind = iota
	// kindCSI: a CSI volume whose driver the host deletes volumes through;
	// the module plays external-provisioner's part for it.
	kindCSI
	// kindInTree: a volume with an in-tree source, provisioned statically
	// or by a kubernetes.io/* plugin; the module keeps the in-tree PV
	// controller's finalizer as that controller does, and deletes nothing.
	kindInTree
	// kindMigrated: a volume with an in-tree source that CSI migration
	// covers, which external-provisioner for a driver the host is
	// configured for takes as its own; the module plays
	// external-provisioner's part for it as for a CSI volume, deleting
	// through the driver the source translates to, and the PV controller's
	// part for the in-tree finalizer.
	kindMigrated
)

// volume is the subject PersistentVolume with the facts the rules read.
type volume struct {
	pv *abi.PersistentVolume
	// claim is the claim claimRef names, with claimRef's UID; nil when it
	// is gone or has another UID.
	claim *abi.PersistentVolumeClaim
	// class is the volume's StorageClass, nil when it does not exist.
	class *abi.StorageClass
	kind  kind
	// driver and handle name the backing volume for DeleteVolume, for
	// kindCSI and kindMigrated. A migrated volume's handle is "": only the
	// host, which sees the in-tree source, can translate it.
	driver, handle string
}

func newVolume(pv *abi.PersistentVolume, claim *abi.PersistentVolumeClaim, drivers []string) *volume {
	// The host sends only a claim with claimRef's UID; checked again here
	// because a claim of the same name and another UID is a new claim, and
	// taking it for the volume's would keep the volume forever.
	if r := pv.Spec.ClaimRef; claim != nil && (r == nil || r.UID != claim.Metadata.UID) {
		claim = nil
	}
	v := &volume{pv: pv, claim: claim}
	v.classify(drivers)
	return v
}

// classify mirrors external-provisioner's isProvisionerForVolume, with the
// host's configured drivers as the known provisioners, and the early returns
// of the PV controller's modifyDeletionFinalizers.
//
// A CSI volume is the module's when its driver is configured and, if it was
// provisioned dynamically, its provisioner is too; both are needed because
// the host can only delete through a configured driver, and upstream asks
// for the provisioner. A volume with an in-tree source that CSI migration
// covers is the module's to protect and delete as external-provisioner's
// when the driver its source translates to is configured and a provisioner
// of a configured driver takes it (by provisioned-by or migrated-to, the
// in-tree plugin's name counting for the driver it migrates to), unless the
// PV controller deletes it itself: a kubernetes.io/* plugin that migration
// does not cover. Any other volume with an in-tree source is the module's
// unless a provisioner outside kubernetes.io/ made it.
func (v *volume) classify(drivers []string) {
	ann := v.pv.Metadata.Annotations
	provisioner, dynamic := ann[AnnProvisionedBy]
	if csi := v.pv.Spec.CSI; csi != nil {
		if !slices.Contains(drivers, csi.Driver) || (dynamic && !slices.Contains(drivers, provisioner)) {
			v.kind = kindForeign
			return
		}
		v.kind, v.driver, v.handle = kindCSI, csi.Driver, csi.VolumeHandle
		return
	}
	inTreeDeleter := strings.HasPrefix(provisioner, "kubernetes.io/") && migratedPlugin(provisioner) == nil
	if m := migratedSource(v.pv.Spec.Source); m != nil && slices.Contains(drivers, m.Driver) && !inTreeDeleter &&
		((dynamic && knownProvisioner(provisioner, drivers)) || knownProvisioner(ann[AnnMigratedTo], drivers)) {
		v.kind, v.driver = kindMigrated, m.Driver
		return
	}
	if dynamic && !strings.HasPrefix(provisioner, "kubernetes.io/") {
		v.kind = kindForeign
		return
	}
	v.kind = kindInTree
}

func (v *volume) has(finalizer string) bool {
	return slices.Contains(v.pv.Metadata.Finalizers, finalizer)
}

func (v *volume) deleting() bool { return v.pv.Metadata.DeletionTimestamp != "" }

func (v *volume) policy() string { return v.pv.Spec.PersistentVolumeReclaimPolicy }

func (v *volume) phase() string { return v.pv.Status.Phase }

// keepsVolume reports a policy under which the backing volume outlives the
// PV (Recycle scrubs it and makes the PV Available again).
func (v *volume) keepsVolume() bool {
	return v.policy() == policyRetain || v.policy() == policyRecycle
}

// static reports a PV that no provisioner created.
func (v *volume) static() bool {
	_, dynamic := v.pv.Metadata.Annotations[AnnProvisionedBy]
	return !dynamic
}

// migrated reports a dynamically provisioned volume whose plugin CSI
// migration covers: kube-controller-manager's IsMigrationEnabledForPlugin on
// its provisioned-by annotation, which is what modifyDeletionFinalizers asks.
func (v *volume) migrated() bool {
	return migratedPlugin(v.pv.Metadata.Annotations[AnnProvisionedBy]) != nil
}

// associated reports whether the PV is, or was, bound to a claim: claimRef
// names one by UID. Without a UID the binding is a user's pre-binding that
// the PV controller has not completed; upstream's isVolumeReleased does not
// treat such a volume as released either.
func (v *volume) associated() bool {
	r := v.pv.Spec.ClaimRef
	return r != nil && r.UID != ""
}

// className mirrors upstream's GetPersistentVolumeClass: the beta annotation
// wins over spec.storageClassName.
func (v *volume) className() string {
	if c, ok := v.pv.Metadata.Annotations[AnnBetaStorageClass]; ok {
		return c
	}
	return v.pv.Spec.StorageClassName
}
