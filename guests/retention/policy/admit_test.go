package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// admitCreate is the admission request for the creation of claim, as
// kube-controller-manager sends it (no UID, status or volume yet), with the
// set's state from the host's caches: set and pods, and the set's other
// claims. The claim being created is not in the caches.
func admitCreate(set *abi.StatefulSet, claim *abi.PersistentVolumeClaim, others ...any) *abi.AdmitRequest {
	c := *claim
	c.Status = abi.PersistentVolumeClaimStatus{}
	c.Spec.VolumeName = ""
	c.Metadata.UID, c.Metadata.ResourceVersion = "", ""
	raw, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	var state *abi.StatefulSetSubject
	if set != nil {
		state = sdktest.Request(now, append([]any{set}, others...)...).StatefulSet
	}
	return &abi.AdmitRequest{
		UID: "req-1", Operation: abi.OperationCreate, Namespace: "default", Name: c.Metadata.Name,
		Kind:        abi.GroupVersionKind{Version: "v1", Kind: abi.KindPersistentVolumeClaim},
		Resource:    abi.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"},
		Object:      &abi.AdmitObject{Kind: abi.KindPersistentVolumeClaim, PersistentVolumeClaim: &c, JSON: raw},
		Now:         now.Format(time.RFC3339Nano),
		StatefulSet: state,
	}
}

// stamped applies the hook's answer to the claim's references as the API
// server applies its patch, and reports whether there was one. It fails the
// test on a denial or on any operation but the two the hook writes.
func stamped(t *testing.T, h *sdktest.Harness, req *abi.AdmitRequest) ([]abi.OwnerReference, bool) {
	t.Helper()
	resp, err := h.Admit(req)
	if err != nil {
		t.Fatalf("admit: %v", err)
	}
	if !resp.Allowed {
		t.Fatalf("admit denied the claim: %s", resp.Message)
	}
	refs := req.Object.PersistentVolumeClaim.Metadata.OwnerReferences
	if len(resp.Patch) == 0 {
		return refs, false
	}
	if len(resp.Patch) != 1 || resp.Patch[0].Op != abi.PatchAdd {
		t.Fatalf("patch = %+v, want one add", resp.Patch)
	}
	p := resp.Patch[0]
	switch {
	case p.Path == "/metadata/ownerReferences" && len(refs) == 0:
		var list []abi.OwnerReference
		if err := json.Unmarshal(p.Value, &list); err != nil {
			t.Fatalf("patch value %s: %v", p.Value, err)
		}
		return list, true
	case p.Path == "/metadata/ownerReferences/-" && len(refs) > 0:
		var r abi.OwnerReference
		if err := json.Unmarshal(p.Value, &r); err != nil {
			t.Fatalf("patch value %s: %v", p.Value, err)
		}
		return append(append([]abi.OwnerReference(nil), refs...), r), true
	}
	t.Fatalf("patch %s %s on a claim with %d references", p.Op, p.Path, len(refs))
	return nil, false
}

// TestAdmitTable: for each policy, each kind of existing references (with
// and without another owner's), with and without the replica's pod, a claim
// created in range is stamped with the set's controller reference exactly
// when whenDeleted is Delete and reconcile would only add that reference;
// and what the hook leaves is what reconcile makes of the claim, so that
// reconcile then writes nothing to it.
func TestAdmitTable(t *testing.T) {
	h := sdktest.New(t)
	for _, p := range policies {
		for _, st := range states {
			for _, extra := range []bool{false, true} {
				for _, withPod := range []bool{false, true} {
					name := p.name + "/" + st.name
					if extra {
						name += "+unrelated"
					}
					if withPod {
						name += "/pod exists"
					}
					t.Run(name, func(t *testing.T) {
						set := sdktest.StatefulSet("web", 3, sdktest.Retention(p.whenDeleted, p.whenScaled))
						pods := []*abi.Pod{sdktest.Pod(set, 0), sdktest.Pod(set, 1)}
						pod := with(sdktest.Pod(set, 2), pending)
						if withPod {
							pods = append(pods, pod)
						}
						start := st.start(set, pod)
						if extra {
							start = append(start, unrelated)
						}
						claim := sdktest.Claim("data", set, 2, sdktest.OwnedBy(start...))
						got, patched := stamped(t, h, admitCreate(set, claim, pods))

						want := p.whenDeleted == "Delete" && st.name == "no reference"
						if patched != want {
							t.Fatalf("stamped = %v, want %v (references %s)", patched, want, showRefs(start))
						}
						if !patched {
							return
						}
						if !sameRefs(got, append(start, ctrl(set))) || got[len(got)-1] != ctrl(set) {
							t.Errorf("references = %s, want %s then the set's controller reference", showRefs(got), showRefs(start))
						}
						// Reconcile of the bare claim writes what the hook wrote.
						bare := run(t, h, sdktest.Request(now, set, pods, claim))
						bare.wantRefs(t, claim.Metadata.Name, got...)
						// Reconcile of the stamped claim writes nothing.
						born := *claim
						born.Metadata.OwnerReferences = got
						run(t, h, sdktest.Request(now, set, pods, &born)).wantWritten(t)
					})
				}
			}
		}
	}
}

// TestAdmitEdges: the claims the hook leaves to reconcile, and the shape of
// its patch.
func TestAdmitEdges(t *testing.T) {
	h := sdktest.New(t)
	deleteRetain := sdktest.Retention("Delete", "Retain")
	web := func(replicas int32, opts ...sdktest.Option) *abi.StatefulSet {
		return sdktest.StatefulSet("web", replicas, opts...)
	}
	cases := []struct {
		name  string
		req   func() *abi.AdmitRequest
		stamp bool
	}{
		{"scale-up 3 to 4: the new claim is stamped", func() *abi.AdmitRequest {
			set := web(4, deleteRetain)
			return admitCreate(set, sdktest.Claim("data", set, 3), sdktest.Pod(set, 0), sdktest.Claim("data", set, 0, sdktest.OwnedBy(ctrl(set))))
		}, true},
		{"ordinal above the range", func() *abi.AdmitRequest {
			set := web(3, deleteRetain)
			return admitCreate(set, sdktest.Claim("data", set, 3))
		}, false},
		{"scaled to zero", func() *abi.AdmitRequest {
			set := web(0, deleteRetain)
			return admitCreate(set, sdktest.Claim("data", set, 0))
		}, false},
		{"ordinals.start 5: ordinal 5 is in range", func() *abi.AdmitRequest {
			set := web(2, deleteRetain, sdktest.OrdinalStart(5))
			return admitCreate(set, sdktest.Claim("data", set, 5))
		}, true},
		{"ordinals.start 5: ordinal 6 is in range", func() *abi.AdmitRequest {
			set := web(2, deleteRetain, sdktest.OrdinalStart(5))
			return admitCreate(set, sdktest.Claim("data", set, 6))
		}, true},
		{"ordinals.start 5: ordinal 4 is below it", func() *abi.AdmitRequest {
			set := web(2, deleteRetain, sdktest.OrdinalStart(5))
			return admitCreate(set, sdktest.Claim("data", set, 4))
		}, false},
		{"ordinals.start 5: ordinal 7 is above it", func() *abi.AdmitRequest {
			set := web(2, deleteRetain, sdktest.OrdinalStart(5))
			return admitCreate(set, sdktest.Claim("data", set, 7))
		}, false},
		{"the second template's claim", func() *abi.AdmitRequest {
			set := web(3, deleteRetain, sdktest.Templates("data", "logs"))
			return admitCreate(set, sdktest.Claim("logs", set, 1))
		}, true},
		{"a claim of no template of the set", func() *abi.AdmitRequest {
			set := web(3, deleteRetain)
			return admitCreate(set, sdktest.Claim("cache", set, 1))
		}, false},
		{"set being deleted in the background", func() *abi.AdmitRequest {
			set := web(3, deleteRetain, sdktest.Deleting(now))
			return admitCreate(set, sdktest.Claim("data", set, 1))
		}, false},
		{"set being deleted with orphan propagation", func() *abi.AdmitRequest {
			set := web(3, deleteRetain, sdktest.Deleting(now), sdktest.Finalizers("orphan"))
			return admitCreate(set, sdktest.Claim("data", set, 1))
		}, false},
		{"set not in the caches", func() *abi.AdmitRequest {
			set := web(3, deleteRetain)
			return admitCreate(nil, sdktest.Claim("data", set, 1))
		}, false},
		{"an unknown whenScaled", func() *abi.AdmitRequest {
			set := web(3, sdktest.Retention("Delete", "Sometimes"))
			return admitCreate(set, sdktest.Claim("data", set, 1))
		}, false},
		{"an unknown whenDeleted", func() *abi.AdmitRequest {
			set := web(3, sdktest.Retention("Always", "Retain"))
			return admitCreate(set, sdktest.Claim("data", set, 1))
		}, false},
		{"whenDeleted left unset is Retain", func() *abi.AdmitRequest {
			set := web(3, sdktest.Retention("", "Delete"))
			return admitCreate(set, sdktest.Claim("data", set, 1))
		}, false},
		{"the set's reference without controller (written before 1.31)", func() *abi.AdmitRequest {
			set := web(3, deleteRetain)
			return admitCreate(set, sdktest.Claim("data", set, 1, sdktest.OwnedBy(plain(set))))
		}, false},
		{"an UPDATE", func() *abi.AdmitRequest {
			set := web(3, deleteRetain)
			req := admitCreate(set, sdktest.Claim("data", set, 1))
			req.Operation, req.OldObject = abi.OperationUpdate, req.Object
			return req
		}, false},
		{"the claim's name from the request (generateName)", func() *abi.AdmitRequest {
			set := web(3, deleteRetain)
			req := admitCreate(set, sdktest.Claim("data", set, 1))
			req.Object.PersistentVolumeClaim.Metadata.Name = ""
			return req
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req()
			got, patched := stamped(t, h, req)
			if patched != tc.stamp {
				t.Fatalf("stamped = %v, want %v", patched, tc.stamp)
			}
			if patched && (len(got) != 1 || got[0] != ctrl(req.StatefulSet.Set)) {
				t.Errorf("references = %s, want the set's controller reference only", showRefs(got))
			}
		})
	}
}

// The patch is one add: the list when the claim has none (a JSON Pointer
// to a member that does not exist cannot be appended to), else the set's
// reference appended, the claim's references kept as they are.
func TestAdmitPatch(t *testing.T) {
	h := sdktest.New(t)
	set := sdktest.StatefulSet("web", 3, sdktest.Retention("Delete", "Delete"))
	resp, err := h.Admit(admitCreate(set, sdktest.Claim("data", set, 2)))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"` + set.Metadata.UID + `","controller":true,"blockOwnerDeletion":true}]`
	if len(resp.Patch) != 1 || resp.Patch[0].Op != abi.PatchAdd || resp.Patch[0].Path != "/metadata/ownerReferences" || string(resp.Patch[0].Value) != want {
		t.Errorf("patch = %+v, want add /metadata/ownerReferences %s", resp.Patch, want)
	}
	resp, err = h.Admit(admitCreate(set, sdktest.Claim("data", set, 2, sdktest.OwnedBy(unrelated))))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Patch) != 1 || resp.Patch[0].Path != "/metadata/ownerReferences/-" || string(resp.Patch[0].Value) != strings.Trim(want, "[]") {
		t.Errorf("patch = %+v, want add /metadata/ownerReferences/- %s", resp.Patch, strings.Trim(want, "[]"))
	}
}

// The admit hook refuses a configuration as reconcile does.
func TestAdmitConfig(t *testing.T) {
	h := sdktest.New(t)
	set := sdktest.StatefulSet("web", 3, sdktest.Retention("Delete", "Retain"))
	req := admitCreate(set, sdktest.Claim("data", set, 1))
	req.Config = []byte(`{"whenDeleted": "Delete"}`)
	if _, err := h.Admit(req); err == nil || !strings.Contains(err.Error(), `unknown field "whenDeleted"`) {
		t.Errorf("err = %v, want the unexpected field named", err)
	}
}
