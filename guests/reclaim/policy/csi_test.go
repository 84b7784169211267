package policy

import (
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

var (
	deleted       = []string{"deleteVolume " + driver + "/" + handle, "remove external", "deleteObject", "event Normal VolumeDeleted"}
	deletedHeld   = []string{"deleteVolume " + driver + "/" + handle, "remove external", "event Normal VolumeDeleted"}
	withExternal  = sdktest.Finalizers(FinalizerExternal)
	withBoth      = sdktest.Finalizers(FinalizerExternal, FinalizerInTree)
	withProtected = sdktest.Finalizers("kubernetes.io/pv-protection", FinalizerExternal)
)

// TestProtectionFinalizer covers handleProtectionFinalizer (C1, C2) and the
// rules for volumes that are not to be reclaimed (C3, C4).
func TestProtectionFinalizer(t *testing.T) {
	h := sdktest.New(t)
	tests := []struct {
		name      string
		pv        *abi.PersistentVolume
		withClaim bool
		want      []string
	}{
		{"C1 bound, Delete, no finalizer", csiPV(), true, []string{"add external"}},
		{"C1 bound, Delete, finalizer present", csiPV(withExternal), true, nil},
		{"C1 bound statically provisioned volume is protected too", static(csiPV()), true, []string{"add external"}},
		{"C1 not while deleting: the API server refuses it", csiPV(deleting, sdktest.Finalizers("kubernetes.io/pv-protection")), true, nil},
		{"C1 not before the claim is bound", csiPV(sdktest.Phase("Pending")), true, nil},
		{"C1 not once released", csiPV(released), true, nil},
		{"C2 Retain drops the finalizer", csiPV(sdktest.ReclaimPolicy("Retain"), withExternal), true, []string{"remove external"}},
		{"C2 Recycle drops the finalizer", csiPV(sdktest.ReclaimPolicy("Recycle"), withExternal), true, []string{"remove external"}},
		{"C2 Retain without finalizer: nothing", csiPV(sdktest.ReclaimPolicy("Retain")), true, nil},
		{"C2 Retain, released, claim gone: finalizer dropped, volume kept", csiPV(sdktest.ReclaimPolicy("Retain"), released, withExternal), false, []string{"remove external"}},
		{"C2 Retain under deletion: finalizer dropped so the PV can go", csiPV(sdktest.ReclaimPolicy("Retain"), released, deleting, withExternal), false, []string{"remove external"}},
		{"C3 static never bound loses the finalizer", unbound(static(csiPV(withExternal))), false, []string{"remove external"}},
		{"C3 never bound and being deleted loses the finalizer", unbound(static(csiPV(withExternal, deleting))), false, []string{"remove external"}},
		{"C3 pre-bound, binding not complete", prebound(static(csiPV(withExternal))), false, []string{"remove external"}},
		{"C3 never bound without finalizer: nothing", unbound(static(csiPV())), false, nil},
		{"C4 never bound carries neither finalizer", unbound(static(csiPV(withBoth))), false, []string{"remove external", "remove in-tree"}},
		{"C4 Retain carries neither finalizer", csiPV(sdktest.ReclaimPolicy("Retain"), withBoth), true, []string{"remove external", "remove in-tree"}},
		{"C4 a bound Delete volume keeps a foreign in-tree finalizer", csiPV(sdktest.Finalizers(FinalizerInTree)), true, []string{"add external"}},
		{"unset reclaim policy is the API default, Retain, as the host sends it", csiPV(sdktest.ReclaimPolicy(""), withExternal), true, []string{"remove external"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []any{drivers}
			if tt.withClaim {
				args = append(args, claim())
			}
			res := reconcileCase(t, h, tt.pv, tt.want, args...)
			if res.RequeueAfterMillis != 0 {
				t.Errorf("requeue after %d ms, want none for finalizer changes", res.RequeueAfterMillis)
			}
		})
	}
}

// prebound gives a volume a claimRef without UID, as a user pre-binding it
// writes, and the Available phase the PV controller keeps until it binds.
func prebound(pv *abi.PersistentVolume) *abi.PersistentVolume {
	pv.Spec.ClaimRef.UID = ""
	pv.Status.Phase = "Available"
	return pv
}

// noClaimRef drops claimRef and keeps the phase, as a stale status would.
func noClaimRef(pv *abi.PersistentVolume) *abi.PersistentVolume {
	pv.Spec.ClaimRef = nil
	return pv
}

// noClaimUID drops claimRef's UID and keeps the phase.
func noClaimUID(pv *abi.PersistentVolume) *abi.PersistentVolume {
	pv.Spec.ClaimRef.UID = ""
	return pv
}

// TestShouldDelete covers shouldDelete's conditions in its order (D1-D3) and
// the module's own (D4): each case satisfies all conditions but one.
func TestShouldDelete(t *testing.T) {
	h := sdktest.New(t)
	tests := []struct {
		name      string
		pv        *abi.PersistentVolume
		withClaim bool
		want      []string
	}{
		{"all hold: claim deleted first", csiPV(released, withExternal), false, deleted},
		{"all hold: PV deleted before its claim (the KEP's case)", csiPV(released, deleting, withExternal), false, deletedHeld},
		{"all hold without the finalizer, PV not deleted", csiPV(released), false, []string{"deleteVolume " + driver + "/" + handle, "deleteObject", "event Normal VolumeDeleted"}},
		{"D1 deleting without the finalizer: already deleted", csiPV(released, deleting, sdktest.Finalizers("kubernetes.io/pv-protection")), false, nil},
		{"D2 bound: the claim is there", csiPV(deleting, withExternal), true, nil},
		{"D2 Failed is not Released", csiPV(sdktest.Phase("Failed"), withExternal), false, nil},
		{"D2 Available is not Released", csiPV(sdktest.Phase("Available"), withExternal), false, nil},
		{"D3 Retain keeps the volume", csiPV(released, sdktest.ReclaimPolicy("Retain")), false, nil},
		{"D4 the claim still exists with claimRef's UID", csiPV(released, withExternal), true, nil},
		{"D4 the claim still exists, PV deleted", csiPV(released, deleting, withExternal), true, nil},
		{"D4 released in the status without claimRef", noClaimRef(csiPV(withExternal, released)), false, []string{"remove external"}},
		{"D4 released in the status, claimRef without UID", noClaimUID(csiPV(released)), false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []any{drivers}
			if tt.withClaim {
				args = append(args, claim())
			}
			reconcileCase(t, h, tt.pv, tt.want, args...)
		})
	}
}

// TestDeletion checks what a deletion asks of the host: the volume and
// driver, the order that removes the finalizer only after DeleteVolume, a
// requeue so a failed deletion is retried, and the event.
func TestDeletion(t *testing.T) {
	h := sdktest.New(t)
	t.Run("claim deleted first", func(t *testing.T) {
		res := reconcileCase(t, h, csiPV(released, withExternal), deleted, drivers)
		if res.RequeueAfterMillis != RetryAfter.Milliseconds() {
			t.Errorf("requeue after %d ms, want %v", res.RequeueAfterMillis, RetryAfter)
		}
		v := res.Actions[0].Volume
		if v.Driver != driver || v.VolumeHandle != handle || v.Secrets != nil {
			t.Errorf("deleteVolume = %+v, want %s/%s without secrets", v, driver, handle)
		}
		msg := res.Actions[3].Event.Message
		if !strings.Contains(msg, handle) || !strings.Contains(msg, driver) || !strings.Contains(msg, "default/data-db-0") {
			t.Errorf("event message %q does not name the volume, driver and claim", msg)
		}
	})
	t.Run("PV deleted before its claim, other finalizers kept", func(t *testing.T) {
		res := reconcileCase(t, h, csiPV(released, deleting, withProtected), deletedHeld, drivers)
		if res.RequeueAfterMillis == 0 {
			t.Error("no requeue after a deletion")
		}
	})
	t.Run("a claim with the same name and another UID is not the volume's", func(t *testing.T) {
		// The host sends no claim then; the module checks the UID anyway.
		newClaim := claim()
		newClaim.Metadata.UID = "recreated"
		reconcileCase(t, h, csiPV(released, withExternal), deleted, drivers, newClaim)
	})
}

// TestForeignCSIVolumes: a volume of a driver the host is not configured
// for, or provisioned by another provisioner, is never touched, whatever
// its state.
func TestForeignCSIVolumes(t *testing.T) {
	h := sdktest.New(t)
	other := sdktest.Drivers{"other.csi.example.com"}
	tests := []struct {
		name    string
		pv      *abi.PersistentVolume
		drivers sdktest.Drivers
	}{
		{"bound without finalizer", csiPV(), other},
		{"released under deletion with finalizer", csiPV(released, deleting, withExternal), other},
		{"released, claim deleted first", csiPV(released, withExternal), other},
		{"Retain with finalizer", csiPV(sdktest.ReclaimPolicy("Retain"), withBoth), other},
		{"never bound with finalizers", unbound(static(csiPV(withBoth))), other},
		{"no driver configured at all", csiPV(released, withExternal), nil},
		{"provisioned by another provisioner", csiPV(released, withExternal, sdktest.Annotations(AnnProvisionedBy, "example.com/legacy")), drivers},
		{"provisioned by an empty provisioner name", csiPV(sdktest.Annotations(AnnProvisionedBy, "")), drivers},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reconcileCase(t, h, tt.pv, nil, tt.drivers)
		})
	}
}
