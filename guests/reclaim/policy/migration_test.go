package policy

import (
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// TestMigrated covers in-tree volumes that CSI migration covers, when the
// host acts for the driver they migrate to: which ones the module takes as
// external-provisioner's (isProvisionerForVolume), their finalizers
// (handleProtectionFinalizer beside modifyDeletionFinalizers' I1) and their
// deletion through the driver, with the handle left to the host.
func TestMigrated(t *testing.T) {
	h := sdktest.New(t)
	ebs := sdktest.Drivers{driver, ebsDriver}
	annotated := sdktest.Annotations(AnnMigratedTo, ebsDriver)
	inTree := sdktest.Finalizers(FinalizerInTree)
	deleteEBS := "deleteVolume " + ebsDriver + "/"
	tests := []struct {
		name      string
		pv        *abi.PersistentVolume
		drivers   sdktest.Drivers
		withClaim bool
		want      []string
	}{
		{"C1 annotated migrated-to a configured driver", migratedPV(annotated), ebs, true, []string{"add external"}},
		{"C1 by plugin before migrated-to: the in-tree name is a known provisioner", migratedPV(), ebs, true, []string{"add external"}},
		{"C1 and I1: the in-tree finalizer goes, the CSI one comes", migratedPV(annotated, inTree), ebs, true, []string{"add external", "remove in-tree"}},
		{"C1 a CSI provisioner's volume with an in-tree source", migratedPV(sdktest.Annotations(AnnProvisionedBy, ebsDriver)), ebs, true, []string{"add external"}},
		{"C1 another provisioner's volume migrated-to a configured driver", migratedPV(annotated, sdktest.Annotations(AnnProvisionedBy, "example.com/legacy")), ebs, true, []string{"add external"}},
		{"C1 static, migrated-to a configured driver", static(migratedPV(annotated)), ebs, true, []string{"add external"}},
		{"static without migrated-to: S2, nothing", static(migratedPV()), ebs, true, nil},
		{"C2 and I1: Retain carries neither", migratedPV(annotated, sdktest.ReclaimPolicy("Retain"), withBoth), ebs, true, []string{"remove external", "remove in-tree"}},
		{"C3 and C4 static never bound carries neither", unbound(static(migratedPV(annotated, withBoth))), ebs, false, []string{"remove external", "remove in-tree"}},
		{"driver not configured: I1 only", migratedPV(annotated, withBoth), drivers, true, []string{"remove in-tree"}},
		{"the source migrates to another driver: I1 only", gcePD(migratedPV(withBoth)), ebs, true, []string{"remove in-tree"}},
		{"the PV controller's own plugin deletes it: I2 and I4", migratedPV(annotated, withExternal, sdktest.Annotations(AnnProvisionedBy, "kubernetes.io/rbd")), ebs, true, []string{"add in-tree", "remove external"}},
		{"D6 claim deleted first", migratedPV(annotated, released, withExternal), ebs, false,
			[]string{deleteEBS, "remove external", "deleteObject", "event Normal VolumeDeleted"}},
		{"D6 PV deleted before its claim (the KEP's case)", migratedPV(annotated, released, deleting, withExternal), ebs, false,
			[]string{deleteEBS, "remove external", "event Normal VolumeDeleted"}},
		{"D6 by plugin, before migrated-to", migratedPV(released, deleting, withExternal), ebs, false,
			[]string{deleteEBS, "remove external", "event Normal VolumeDeleted"}},
		{"D1 deleting without the finalizer", migratedPV(annotated, released, deleting, sdktest.Finalizers("kubernetes.io/pv-protection")), ebs, false, nil},
		{"D4 the claim still exists", migratedPV(annotated, released, deleting, withExternal), ebs, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []any{tt.drivers}
			if tt.withClaim {
				args = append(args, claim())
			}
			reconcileCase(t, h, tt.pv, tt.want, args...)
		})
	}
}

// TestMigratedDeletionMessages: the deletion of a migrated volume names no
// handle (the host translates the in-tree source) and its events say which
// source and driver.
func TestMigratedDeletionMessages(t *testing.T) {
	h := sdktest.New(t)
	ebs := sdktest.Drivers{ebsDriver}
	res := reconcileCase(t, h, migratedPV(released, withExternal), []string{"deleteVolume " + ebsDriver + "/", "remove external", "deleteObject", "event Normal VolumeDeleted"}, ebs)
	if v := res.Actions[0].Volume; v.Driver != ebsDriver || v.VolumeHandle != "" {
		t.Errorf("deleteVolume = %+v, want driver %s and no handle", v, ebsDriver)
	}
	if msg := res.Actions[3].Event.Message; !strings.Contains(msg, "awsElasticBlockStore") || !strings.Contains(msg, ebsDriver) {
		t.Errorf("event message %q does not name the source and the driver", msg)
	}
	// A secret name without a namespace: the class is refused (D5).
	class := sdktest.StorageClass("gp2", "kubernetes.io/aws-ebs")
	class.Parameters = map[string]string{"csi.storage.k8s.io/provisioner-secret-name": "x"}
	res = reconcileCase(t, h, migratedPV(released, withExternal), []string{"event Warning VolumeFailedDelete"}, ebs, class)
	if msg := res.Actions[0].Event.Message; !strings.Contains(msg, "awsElasticBlockStore") || !strings.Contains(msg, ebsDriver) {
		t.Errorf("warning %q does not name the source and the driver", msg)
	}
}
