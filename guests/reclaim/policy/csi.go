package policy

import (
	"fmt"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// reconcileCSI plays external-provisioner's part for a CSI volume of a
// configured driver, or an in-tree volume migrated to one, in its order
// (syncVolume): first the protection finalizer (handleProtectionFinalizer),
// then whether the backing volume must go (shouldDelete), then the deletion
// (deleteVolumeOperation). Rule names (C1, D1, ...) are those of README.md's
// decision table.
func reconcileCSI(v *volume, p *plan) {
	hasExternal := v.has(FinalizerExternal)
	switch {
	case v.policy() == policyDelete && !v.deleting() && v.phase() == phaseBound && !hasExternal:
		// C1. Not while deleting: the API server refuses new finalizers on
		// an object under deletion.
		p.addFinalizer(FinalizerExternal, "C1: bound, reclaim policy Delete: protect the PV until its volume is deleted (handleProtectionFinalizer)")
		hasExternal = true
	case v.keepsVolume() && hasExternal:
		// C2. The volume outlives the PV, so nothing must hold the PV.
		p.removeFinalizer(FinalizerExternal, "C2: reclaim policy "+v.policy()+" keeps the volume (handleProtectionFinalizer)")
		hasExternal = false
	case !v.associated() && hasExternal:
		// C3. Nothing will ever release this PV, so the finalizer would
		// hold it forever once it is deleted (KEP-2644: a PV not associated
		// with a claim carries no protection finalizer).
		p.removeFinalizer(FinalizerExternal, "C3: not bound to a claim, nothing to reclaim (KEP-2644)")
		hasExternal = false
	}
	switch hasInTree := v.has(FinalizerInTree); {
	case hasInTree && v.kind == kindMigrated && v.migrated():
		// I1 on a migrated volume: the PV controller drops its finalizer
		// whatever the policy (modifyDeletionFinalizers).
		dropInTreeForMigration(v, p)
	case hasInTree && (v.keepsVolume() || !v.associated()):
		// C4. No controller removes the in-tree finalizer from a CSI
		// volume; on a PV that is not to be reclaimed it could only block
		// the PV's deletion.
		p.removeFinalizer(FinalizerInTree, "C4: the in-tree finalizer does not belong on a CSI volume that is not to be reclaimed")
	}

	if !shouldDelete(v, hasExternal) {
		return
	}
	reclaimVolume(v, p, hasExternal)
}

// shouldDelete mirrors external-provisioner's shouldDelete, in its order,
// for a provisioner run with the finalizer enabled, and adds one check: the
// module never deletes the volume of a PV whose claim still exists.
func shouldDelete(v *volume, hasExternal bool) bool {
	switch {
	case !hasExternal && v.deleting():
		// D1. The finalizer is gone from a PV under deletion: its volume
		// was deleted already (or someone else decided it must not be).
		return false
	case v.phase() != phaseReleased:
		// D2. Only the PV controller's Released says the claim is gone.
		return false
	case v.policy() != policyDelete:
		// D3.
		return false
	case !v.associated() || v.claim != nil:
		// D4. Released in the status, but the claim claimRef names (by
		// UID) is still there, or there is none: the status is stale or
		// was edited, and storage that a claim may still reference is
		// never deleted on its word.
		return false
	}
	return true
}

// reclaimVolume asks for the deletion of v's backing volume (D5, D6).
//
// The actions are ordered [deleteVolume, removeFinalizer, deleteObject,
// event], and the executor stops at the first that fails or is refused: the
// finalizer goes only after the driver said the volume is gone, and the PV
// object only after that. external-provisioner deletes the PV object before
// it removes its finalizer, but the executor sends nothing more on an
// object after deleteObject in the same result, which would leave the
// finalizer to a later reconcile and call DeleteVolume a second time. If
// deleteObject fails after the finalizer is gone, the PV is still Released
// with policy Delete, so the next reconcile asks again, and DeleteVolume of
// a volume that no longer exists succeeds, as CSI requires.
func reclaimVolume(v *volume, p *plan, hasExternal bool) {
	p.requeue = RetryAfter
	// The host resolves the secret itself and ignores one a module names;
	// the module only checks that the class names it resolvably, so that a
	// misconfigured class is reported here, as external-provisioner
	// reports it, instead of asking for a deletion the host must fail.
	if err := checkDeletionSecret(v); err != nil {
		p.add(sdk.Warning(p.target, ReasonVolumeFailedDelete,
			fmt.Sprintf("cannot delete %s: %v; the PersistentVolume keeps its finalizer and the deletion is retried", v.backing(), err)),
			"D5: deletion secret unresolvable")
		return
	}
	// A migrated volume's handle is left to the host, which translates the
	// in-tree source as external-provisioner does (csi-translation-lib).
	p.add(sdk.DeleteVolume(p.target, abi.VolumeDelete{Driver: v.driver, VolumeHandle: v.handle}),
		"D6: released, reclaim policy Delete, claim gone: delete the backing volume (shouldDelete, deleteVolumeOperation)")
	if hasExternal {
		p.removeFinalizer(FinalizerExternal, "D6: the driver deleted the volume")
	}
	if !v.deleting() {
		p.add(sdk.DeleteObject(p.target), "D6: the PersistentVolume goes with its volume")
	}
	ref := v.pv.Spec.ClaimRef
	p.add(sdk.Normal(p.target, ReasonVolumeDeleted,
		fmt.Sprintf("deleted %s: reclaim policy Delete, claim %s/%s is gone", v.backing(), ref.Namespace, ref.Name)),
		"D6: report the deletion")
}

// backing names the volume's backing volume for events.
func (v *volume) backing() string {
	if v.kind == kindMigrated {
		return "the " + v.pv.Spec.Source + " volume through CSI driver " + v.driver + " (CSI migration)"
	}
	return "volume " + v.handle + " through CSI driver " + v.driver
}
