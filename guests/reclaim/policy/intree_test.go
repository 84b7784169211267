package policy

import (
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// TestInTree covers modifyDeletionFinalizers (I1-I4) and the static rules
// (S1, S2) for volumes of plugins the module does not act for: an rbd
// volume (CSI migration does not cover rbd), and an aws-ebs one with no
// ebs.csi.aws.com configured. The module never deletes an in-tree volume.
func TestInTree(t *testing.T) {
	h := sdktest.New(t)
	annotated := sdktest.Annotations(AnnMigratedTo, ebsDriver)
	inTree := sdktest.Finalizers(FinalizerInTree)
	tests := []struct {
		name string
		pv   *abi.PersistentVolume
		want []string
	}{
		{"I2 dynamic, Delete, no finalizer", inTreePV(), []string{"add in-tree"}},
		{"I2 finalizer present: nothing", inTreePV(inTree), nil},
		{"I2 regardless of phase", inTreePV(sdktest.Phase("Available")), []string{"add in-tree"}},
		{"I2 not while deleting: the API server refuses it", inTreePV(deleting, sdktest.Finalizers("kubernetes.io/pv-protection")), nil},
		{"I3 Retain drops it", inTreePV(sdktest.ReclaimPolicy("Retain"), inTree), []string{"remove in-tree"}},
		{"I3 Recycle drops it", inTreePV(sdktest.ReclaimPolicy("Recycle"), inTree), []string{"remove in-tree"}},
		{"I4 the CSI finalizer goes from an unmigrated in-tree volume", inTreePV(sdktest.Finalizers(FinalizerExternal, FinalizerInTree)), []string{"remove external"}},
		{"I2+I4 both at once", inTreePV(withExternal), []string{"add in-tree", "remove external"}},
		{"I3+I4 Retain carries neither", inTreePV(sdktest.ReclaimPolicy("Retain"), withBoth), []string{"remove in-tree", "remove external"}},
		{"I1 migrated: the in-tree finalizer goes", migratedPV(annotated, inTree), []string{"remove in-tree"}},
		{"I1 migrated: the CSI finalizer stays", migratedPV(annotated, withBoth), []string{"remove in-tree"}},
		{"I1 migrated, no finalizer: nothing added", migratedPV(annotated), nil},
		{"I1 by plugin: not yet annotated migrated-to", migratedPV(inTree), []string{"remove in-tree"}},
		{"I1 by plugin: nothing added before migrated-to", migratedPV(), nil},
		{"I1 by plugin: whatever the policy", migratedPV(sdktest.ReclaimPolicy("Retain"), withBoth), []string{"remove in-tree"}},
		{"I1 by plugin, gce-pd", gcePD(migratedPV(inTree)), []string{"remove in-tree"}},
		{"not migrated in 1.37: migrated-to does not stop I2", inTreePV(sdktest.Annotations(AnnMigratedTo, "rbd.csi.ceph.com")), []string{"add in-tree"}},
		{"not migrated in 1.37: migrated-to does not stop I4", inTreePV(sdktest.Annotations(AnnMigratedTo, "rbd.csi.ceph.com"), withBoth), []string{"remove external"}},
		{"released, Delete: the PV controller deletes it", inTreePV(released, deleting, inTree), nil},
		{"released, Delete, not deleted: nothing", inTreePV(released, inTree), nil},
		{"S2 static bound Delete: not protected upstream", static(inTreePV()), nil},
		{"S2 static bound Delete keeps a finalizer it has", static(inTreePV(inTree)), nil},
		{"S1 static never bound loses the finalizers", unbound(static(inTreePV(withBoth))), []string{"remove in-tree", "remove external"}},
		{"S1 static Retain loses the finalizer", static(inTreePV(sdktest.ReclaimPolicy("Retain"), inTree)), []string{"remove in-tree"}},
		{"dynamic never bound keeps its protection, as upstream", unbound(inTreePV(inTree)), nil},
		{"non-CSI external provisioner: not touched", inTreePV(withBoth, sdktest.Annotations(AnnProvisionedBy, "example.com/nfs")), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The volume's driver list does not matter for in-tree volumes.
			reconcileCase(t, h, tt.pv, tt.want, drivers)
		})
	}
}

// gcePD makes pv a gce-pd volume.
func gcePD(pv *abi.PersistentVolume) *abi.PersistentVolume {
	pv.Metadata.Annotations[AnnProvisionedBy] = "kubernetes.io/gce-pd"
	pv.Spec.Source = "gcePersistentDisk"
	return pv
}
