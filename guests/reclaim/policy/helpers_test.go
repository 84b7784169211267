package policy

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// These tests run natively, and against the compiled module when
// KUBEPLUG_TEST_WASM names it (see package sdktest).

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	driver = "hostpath.csi.k8s.io"
	handle = "vol-1"
	pvName = "pv-1"
)

// drivers is a host configured for driver and one more.
var drivers = sdktest.Drivers{"other.csi.example.com", driver}

// claim is the claim the test volumes are bound to: default/data-db-0.
func claim() *abi.PersistentVolumeClaim {
	return sdktest.Claim("data", sdktest.StatefulSet("db", 1), 0)
}

// csiPV is a CSI volume of driver, dynamically provisioned by it for claim()
// with class "fast", bound, reclaim policy Delete; opts change it.
func csiPV(opts ...sdktest.Option) *abi.PersistentVolume {
	base := []sdktest.Option{
		sdktest.CSI(driver, handle), sdktest.BoundTo(claim()),
		sdktest.Annotations(AnnProvisionedBy, driver), sdktest.StorageClassName("fast"),
	}
	return sdktest.PersistentVolume(pvName, append(base, opts...)...)
}

// released is the Phase option of a volume whose claim is gone.
var released = sdktest.Phase("Released")

// deleting marks a volume deleted an hour ago.
var deleting = sdktest.Deleting(now.Add(-time.Hour))

// unbound drops a volume's claimRef: a static volume never bound.
func unbound(pv *abi.PersistentVolume) *abi.PersistentVolume {
	pv.Spec.ClaimRef = nil
	pv.Status.Phase = "Available"
	return pv
}

// static drops a volume's provisioned-by annotation.
func static(pv *abi.PersistentVolume) *abi.PersistentVolume {
	delete(pv.Metadata.Annotations, AnnProvisionedBy)
	return pv
}

// inTreePV is an in-tree (rbd) volume bound to claim(), provisioned by
// kubernetes.io/rbd, a plugin CSI migration does not cover, unless static is
// applied.
func inTreePV(opts ...sdktest.Option) *abi.PersistentVolume {
	base := []sdktest.Option{sdktest.BoundTo(claim()), sdktest.Annotations(AnnProvisionedBy, "kubernetes.io/rbd")}
	pv := sdktest.PersistentVolume(pvName, append(base, opts...)...)
	pv.Spec.Source = "rbd"
	return pv
}

// ebsDriver is the CSI driver kubernetes.io/aws-ebs migrates to.
const ebsDriver = "ebs.csi.aws.com"

// migratedPV is an in-tree (awsElasticBlockStore) volume bound to claim(),
// provisioned by kubernetes.io/aws-ebs, which CSI migration covers, with
// class "gp2", reclaim policy Delete and no migrated-to annotation yet.
func migratedPV(opts ...sdktest.Option) *abi.PersistentVolume {
	base := []sdktest.Option{
		sdktest.BoundTo(claim()), sdktest.Annotations(AnnProvisionedBy, "kubernetes.io/aws-ebs"), sdktest.StorageClassName("gp2"),
	}
	pv := sdktest.PersistentVolume(pvName, append(base, opts...)...)
	pv.Spec.Source = "awsElasticBlockStore"
	return pv
}

// describe renders actions compactly for comparisons:
//
//	add external | remove in-tree | deleteVolume driver/handle [secret ns/name] | deleteObject | event Normal VolumeDeleted
func describe(actions []abi.Action) []string {
	short := map[string]string{FinalizerExternal: "external", FinalizerInTree: "in-tree"}
	out := []string{}
	for _, a := range actions {
		switch a.Type {
		case abi.ActionAddFinalizer:
			out = append(out, "add "+short[a.Finalizer])
		case abi.ActionRemoveFinalizer:
			out = append(out, "remove "+short[a.Finalizer])
		case abi.ActionDeleteVolume:
			s := "deleteVolume " + a.Volume.Driver + "/" + a.Volume.VolumeHandle
			if sec := a.Volume.Secrets; sec != nil {
				s += " secret " + sec.Namespace + "/" + sec.Name
			}
			out = append(out, s)
		case abi.ActionEvent:
			out = append(out, "event "+a.Event.Type+" "+a.Event.Reason)
		default:
			out = append(out, a.Type)
		}
	}
	return out
}

// reconcileCase reconciles pv with the other request arguments and checks
// that the module returns want (as describe renders it), every action on pv.
func reconcileCase(t *testing.T, h *sdktest.Harness, pv *abi.PersistentVolume, want []string, args ...any) *abi.Result {
	t.Helper()
	res := h.MustReconcile(sdktest.Request(now, append([]any{pv}, args...)...))
	if got := describe(res.Actions); !slices.Equal(got, want) {
		t.Fatalf("actions = [%s], want [%s]\nmessage: %s", strings.Join(got, ", "), strings.Join(want, ", "), res.Message)
	}
	ref := abi.ObjectRef{Kind: abi.KindPersistentVolume, Name: pv.Metadata.Name, UID: pv.Metadata.UID}
	for i, a := range res.Actions {
		if a.Target != ref {
			t.Errorf("action %d targets %+v, want the volume %+v", i, a.Target, ref)
		}
	}
	return res
}
