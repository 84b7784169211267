package actions

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeplug/kubeplug/abi"
)

// Names external-provisioner and the PV controller give to a
// PersistentVolume's metadata, which the executor reads before a
// DeleteVolume.
const (
	// FinalizerExternalProvisioner protects a PV until its backing volume
	// is deleted (KEP-2644).
	FinalizerExternalProvisioner = "external-provisioner.volume.kubernetes.io/finalizer"
	// AnnProvisionedBy names the provisioner that created a dynamically
	// provisioned PV.
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// AnnMigratedTo names the CSI driver an in-tree volume migrated to.
	AnnMigratedTo = "pv.kubernetes.io/migrated-to"
	// AnnDeletionSecretName and AnnDeletionSecretNamespace name the Secret
	// external-provisioner recorded at provisioning for DeleteVolume.
	AnnDeletionSecretName      = "volume.kubernetes.io/provisioner-deletion-secret-name"
	AnnDeletionSecretNamespace = "volume.kubernetes.io/provisioner-deletion-secret-namespace"
	// annBetaStorageClass wins over spec.storageClassName, as in upstream's
	// GetPersistentVolumeClass.
	annBetaStorageClass = "volume.beta.kubernetes.io/storage-class"
)

// Values of a PersistentVolume's phase and reclaim policy.
const (
	phaseReleased = "Released"
	policyDelete  = "Delete"
)

// inputVolume is the module's view of the target PV, in the shape the
// executor's own reads have, so that both are checked by the same rules.
func inputVolume(t Target) PersistentVolume {
	pv := t.Object.(*abi.PersistentVolume)
	csi, plugin := inputCSI(pv)
	return PersistentVolume{
		Meta:             Meta{UID: t.UID, ResourceVersion: t.ResourceVersion, Finalizers: t.Finalizers, Deleting: t.Deleting},
		Annotations:      pv.Metadata.Annotations,
		Phase:            pv.Status.Phase,
		ReclaimPolicy:    pv.Spec.PersistentVolumeReclaimPolicy,
		ClaimRef:         pv.Spec.ClaimRef,
		CSI:              csi,
		InTreePlugin:     plugin,
		StorageClassName: pv.Spec.StorageClassName,
	}
}

// deletionRefusal returns which of the host's rules forbids deleting the
// backing volume of v as want asks, or "" when none does. The rules are
// external-provisioner's for a provisioner run with its finalizer
// (sig-storage-lib-external-provisioner's isProvisionerForVolume and
// shouldDelete), with the host's configured drivers as the known
// provisioners, plus two of the host's own: the volume's claim must be gone
// (checked separately, it needs a read), and the action must name the PV's
// own driver and handle. An in-tree volume that CSI migration covers is
// deleted as external-provisioner deletes it: through the driver its source
// translates to.
func deletionRefusal(v PersistentVolume, want *abi.VolumeDelete, configured func(string) bool) string {
	csi := v.CSI
	switch {
	case v.Untranslatable != "":
		return fmt.Sprintf("its in-tree source (plugin %s) does not translate to CSI: %s", v.InTreePlugin, v.Untranslatable)
	case csi == nil:
		return "the PersistentVolume is neither a CSI volume nor an in-tree volume that CSI migration covers"
	}
	if why := volumeMismatch(want, csi, v.InTreePlugin != ""); why != "" {
		return why
	}
	if !configured(csi.Driver) {
		return fmt.Sprintf("CSI driver %q is not configured on this host; add it to the host's CSI drivers or leave the volume to its external provisioner", csi.Driver)
	}
	// isProvisionerForVolume: a dynamically provisioned volume belongs to
	// the provisioner its annotation names (or the driver it migrated to),
	// whatever driver its source names; a static one to its CSI driver, or
	// for an in-tree source to the driver it migrated to.
	known := func(name string) bool { return knownProvisioner(name, configured) }
	migratedTo := v.Annotations[AnnMigratedTo]
	switch p, dynamic := v.Annotations[AnnProvisionedBy]; {
	case dynamic && !known(p) && !known(migratedTo):
		return fmt.Sprintf("annotation %s names provisioner %q, which is not a CSI driver configured on this host nor an in-tree plugin migrated to one: the volume is its provisioner's to delete", AnnProvisionedBy, p)
	case !dynamic && v.InTreePlugin != "" && !known(migratedTo):
		return fmt.Sprintf("a statically provisioned in-tree volume is deleted through CSI only when annotation %s names a CSI driver configured on this host", AnnMigratedTo)
	}
	switch {
	case v.Deleting && !slices.Contains(v.Finalizers, FinalizerExternalProvisioner):
		return fmt.Sprintf("the PersistentVolume is being deleted without finalizer %s: its volume was deleted already, or is not to be", FinalizerExternalProvisioner)
	case v.Phase != phaseReleased:
		return fmt.Sprintf("the PersistentVolume's phase is %q, not %s: only a released volume is deleted", v.Phase, phaseReleased)
	case v.ReclaimPolicy != policyDelete:
		return fmt.Sprintf("the PersistentVolume's reclaim policy is %q, not %s", v.ReclaimPolicy, policyDelete)
	case v.ClaimRef == nil || v.ClaimRef.UID == "":
		return "the PersistentVolume's claimRef names no claim by UID, so its claim cannot be known to be gone"
	}
	return ""
}

// inputClaimRefusal refuses a deletion when the module's own input holds the
// claim the volume's claimRef names, with its UID.
func inputClaimRefusal(req *abi.ReconcileRequest, v PersistentVolume) string {
	if req == nil || req.PersistentVolume == nil || req.PersistentVolume.Claim == nil || v.ClaimRef == nil {
		return ""
	}
	c, r := req.PersistentVolume.Claim.Metadata, v.ClaimRef
	if c.Namespace == r.Namespace && c.Name == r.Name && c.UID == r.UID {
		return claimExists(r)
	}
	return ""
}

func claimExists(r *abi.ObjectReference) string {
	return fmt.Sprintf("its claim %s/%s (uid %s) still exists", r.Namespace, r.Name, r.UID)
}

// checkVolumeDeletion reads the target PV and its claim from the API server
// and returns an error wrapping ErrRefused when the host's rules forbid the
// deletion, a conflict when the PV is no longer the version the module saw,
// or nil with the PV as read.
func (e *Executor) checkVolumeDeletion(ctx context.Context, a abi.Action, t Target, st *objectState) (PersistentVolume, error) {
	cur, err := e.Cluster.CurrentVolume(ctx, t.Name)
	if err != nil {
		return cur, err
	}
	// A backing volume deleted on a stale view is data lost: act only on
	// the version the module saw.
	if cur.UID != t.UID || cur.ResourceVersion != st.rv {
		return cur, conflict(t, fmt.Errorf("%s is now uid=%s resourceVersion=%s, the module saw uid=%s resourceVersion=%s: not deleting its volume",
			t, cur.UID, cur.ResourceVersion, t.UID, st.rv))
	}
	if why := deletionRefusal(cur, a.Volume, e.Volumes.Configured); why != "" {
		return cur, refusal(a, t, why)
	}
	r := cur.ClaimRef
	claim, err := e.Cluster.Current(ctx, abi.KindPersistentVolumeClaim, r.Namespace, r.Name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return cur, fmt.Errorf("read claim %s/%s of %s: %w", r.Namespace, r.Name, t, err)
	case claim.UID == r.UID:
		return cur, refusal(a, t, claimExists(r))
	}
	return cur, nil
}

// refusal is the error of an action the host's rules forbid.
func refusal(a abi.Action, t Target, why string) error {
	return fmt.Errorf("%w: %s on %s: %s", ErrRefused, a.Type, t, why)
}

// conflict is the error of a write not sent because t is no longer the
// object the module saw.
func conflict(t Target, err error) error {
	return apierrors.NewConflict(schema.GroupResource{Resource: abi.KindOf(t.Kind).Resource}, t.Name, err)
}
