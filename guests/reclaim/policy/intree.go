package policy

// reconcileInTree keeps the finalizers of a volume with an in-tree source as
// the in-tree PV controller's modifyDeletionFinalizers does, so that on a
// cluster whose kube-controller-manager does the same the two agree. It
// never deletes a volume and never removes the in-tree finalizer from a PV
// to be reclaimed: the PV controller deletes in-tree volumes through their
// plugin and removes its finalizer after that (doDeleteVolume,
// removeDeletionProtectionFinalizer). Rule names are those of README.md.
func reconcileInTree(v *volume, p *plan) {
	if v.static() {
		// modifyDeletionFinalizers protects only dynamically provisioned
		// volumes (S2: nothing to add). A static PV that carries a
		// protection finalizer anyway (restored from a backup, copied from
		// another cluster) while nothing is to be reclaimed would be held
		// forever once deleted: nobody removes it (S1).
		if !v.associated() || v.keepsVolume() {
			for _, f := range []string{FinalizerInTree, FinalizerExternal} {
				if v.has(f) {
					p.removeFinalizer(f, "S1: statically provisioned and not to be reclaimed: no protection finalizer (KEP-2644)")
				}
			}
		}
		return
	}
	if v.migrated() {
		// I1. The PV controller decides migration by the plugin
		// (IsMigrationEnabledForPlugin), whether or not it has annotated
		// migrated-to yet: the CSI driver's provisioner protects and
		// deletes the volume.
		dropInTreeForMigration(v, p)
		return
	}
	switch hasInTree := v.has(FinalizerInTree); {
	case v.policy() == policyDelete && !hasInTree && !v.deleting():
		// I2. modifyDeletionFinalizers does not look at the deletion
		// timestamp, but the API server refuses new finalizers on an object
		// under deletion.
		p.addFinalizer(FinalizerInTree, "I2: provisioned by "+v.pv.Metadata.Annotations[AnnProvisionedBy]+", reclaim policy Delete (modifyDeletionFinalizers)")
	case v.keepsVolume() && hasInTree:
		p.removeFinalizer(FinalizerInTree, "I3: reclaim policy "+v.policy()+" keeps the volume (modifyDeletionFinalizers)")
	}
	if v.has(FinalizerExternal) {
		// I4. Left by external-provisioner while CSI migration was on; the
		// in-tree plugin deletes the volume now.
		p.removeFinalizer(FinalizerExternal, "I4: an in-tree volume not migrated to CSI (modifyDeletionFinalizers)")
	}
}

// dropInTreeForMigration removes the in-tree finalizer (I1) from a volume
// whose plugin CSI migration covers, as modifyDeletionFinalizers does before
// anything else for such a volume.
func dropInTreeForMigration(v *volume, p *plan) {
	if v.has(FinalizerInTree) {
		p.removeFinalizer(FinalizerInTree, "I1: plugin "+v.pv.Metadata.Annotations[AnnProvisionedBy]+" is migrated to CSI (modifyDeletionFinalizers)")
	}
}
