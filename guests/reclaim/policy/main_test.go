package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

func TestManifest(t *testing.T) {
	m := sdktest.New(t).Manifest()
	if m.Name != "reclaim" || m.Version != "0.1.0" || m.Subject != abi.SubjectPersistentVolume || m.ABIVersion != abi.Current.String() {
		t.Errorf("manifest = %+v", m)
	}
	if !slices.Equal(m.Hooks, []string{abi.HookReconcile}) {
		t.Errorf("hooks = %v", m.Hooks)
	}
	allows := func(action, res string) bool {
		for _, c := range m.Capabilities {
			if c.Allows(action, res) {
				return true
			}
		}
		return false
	}
	for _, a := range []string{abi.ActionAddFinalizer, abi.ActionRemoveFinalizer, abi.ActionDeleteObject, abi.ActionEvent} {
		if !allows(a, "persistentvolumes") {
			t.Errorf("%s on persistentvolumes not allowed", a)
		}
		if allows(a, "persistentvolumeclaims") {
			t.Errorf("%s on persistentvolumeclaims allowed; the module touches volumes only", a)
		}
	}
	if !allows(abi.ActionDeleteVolume, "") {
		t.Error("deleteVolume not allowed")
	}
	if len(m.Capabilities) != 5 {
		t.Errorf("capabilities = %+v, want exactly the five the module uses", m.Capabilities)
	}
}

func TestConfig(t *testing.T) {
	h := sdktest.New(t)
	for _, cfg := range []string{"", "{}", " {} "} {
		if _, err := h.Reconcile(sdktest.Request(now, csiPV(), drivers, sdktest.Config(cfg))); err != nil {
			t.Errorf("config %q: %v", cfg, err)
		}
	}
	_, err := h.Reconcile(sdktest.Request(now, csiPV(), drivers, sdktest.Config(`{"drivers": ["x"]}`)))
	if err == nil || !strings.Contains(err.Error(), `unknown field "drivers"`) {
		t.Errorf("err = %v, want the unknown field named", err)
	}
}

func TestVolumeGone(t *testing.T) {
	req := sdktest.Request(now, sdktest.Key(pvName), drivers)
	req.Subject = abi.SubjectPersistentVolume
	req.StatefulSet = nil
	res := sdktest.New(t).MustReconcile(req)
	if len(res.Actions) != 0 || res.RequeueAfterMillis != 0 {
		t.Errorf("result = %+v for a volume that no longer exists, want nothing", res)
	}
}

// TestSteadyState: once the module's finalizer changes are made, it asks
// for nothing more, so a converged cluster costs no writes.
func TestSteadyState(t *testing.T) {
	h := sdktest.New(t)
	withEBS := sdktest.Drivers{driver, ebsDriver}
	tests := []struct {
		name    string
		pv      *abi.PersistentVolume
		drivers sdktest.Drivers
	}{
		{"CSI bound", csiPV(), drivers},
		{"CSI Retain", csiPV(sdktest.ReclaimPolicy("Retain"), withBoth), drivers},
		{"CSI never bound", unbound(static(csiPV(withBoth))), drivers},
		{"in-tree bound", inTreePV(), drivers},
		{"in-tree Retain", inTreePV(sdktest.ReclaimPolicy("Retain"), withBoth), drivers},
		{"in-tree migrated, driver not configured", migratedPV(withBoth, sdktest.Annotations(AnnMigratedTo, ebsDriver)), drivers},
		{"in-tree migrated to a configured driver", migratedPV(withBoth, sdktest.Annotations(AnnMigratedTo, ebsDriver)), withEBS},
		{"in-tree migrated, Retain", migratedPV(withBoth, sdktest.ReclaimPolicy("Retain")), withEBS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv := tt.pv
			for round := 0; round < 3; round++ {
				res := h.MustReconcile(sdktest.Request(now, pv, claim(), tt.drivers))
				if len(res.Actions) == 0 {
					return
				}
				pv = applyFinalizers(t, pv, res.Actions)
			}
			t.Fatalf("still acting after 3 rounds; finalizers %v", pv.Metadata.Finalizers)
		})
	}
}

// applyFinalizers returns a copy of pv with the finalizer actions applied.
func applyFinalizers(t *testing.T, pv *abi.PersistentVolume, actions []abi.Action) *abi.PersistentVolume {
	t.Helper()
	next := *pv
	fs := slices.Clone(pv.Metadata.Finalizers)
	for _, a := range actions {
		switch a.Type {
		case abi.ActionAddFinalizer:
			fs = append(fs, a.Finalizer)
		case abi.ActionRemoveFinalizer:
			fs = slices.DeleteFunc(fs, func(f string) bool { return f == a.Finalizer })
		default:
			t.Fatalf("unexpected %s", a.Type)
		}
	}
	next.Metadata.Finalizers = fs
	return &next
}
