package abi_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
)

func ptr[T any](v T) *T { return &v }

func sampleRequest() *abi.ReconcileRequest {
	sc := "fast"
	return &abi.ReconcileRequest{
		Subject: abi.SubjectStatefulSet,
		Key:     "default/web",
		Now:     "2026-01-02T03:04:05.000000006Z",
		Config:  []byte(`{"a":1}`),
		StatefulSet: &abi.StatefulSetSubject{
			Set: &abi.StatefulSet{
				Metadata: abi.ObjectMeta{
					Name: "web", Namespace: "default", UID: "set-1", ResourceVersion: "7",
					Labels: map[string]string{"app": "web"}, Finalizers: []string{"f"},
				},
				Spec: abi.StatefulSetSpec{
					Replicas: 3,
					Ordinals: &abi.StatefulSetOrdinals{Start: 2},
					UpdateStrategy: abi.StatefulSetUpdateStrategy{
						Type:          "RollingUpdate",
						RollingUpdate: &abi.RollingUpdateStatefulSetStrategy{Partition: ptr(int32(1)), MaxUnavailable: "25%"},
					},
					VolumeClaimTemplates: []abi.PersistentVolumeClaim{{
						Metadata: abi.ObjectMeta{Name: "data"},
						Spec: abi.PersistentVolumeClaimSpec{
							AccessModes:      []string{"ReadWriteOnce"},
							Resources:        abi.ResourceRequirements{Requests: map[string]string{"storage": "1Gi"}},
							StorageClassName: &sc,
						},
					}},
					PersistentVolumeClaimRetentionPolicy: &abi.StatefulSetPersistentVolumeClaimPolicy{WhenDeleted: "Delete", WhenScaled: "Retain"},
				},
				Status: abi.StatefulSetStatus{Replicas: 3, UpdateRevision: "web-abc"},
			},
			Pods: []abi.Pod{{
				Metadata: abi.ObjectMeta{Name: "web-2", Namespace: "default", UID: "pod-2",
					OwnerReferences: []abi.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-1", Controller: true}}},
				Spec:   abi.PodSpec{NodeName: "n1", Volumes: []abi.PodVolume{{Name: "data", ClaimName: "data-web-2"}}},
				Status: abi.PodStatus{Phase: "Running", Conditions: []abi.Condition{{Type: "Ready", Status: "True"}}},
			}},
			Claims: []abi.PersistentVolumeClaim{{
				Metadata: abi.ObjectMeta{Name: "data-web-2", Namespace: "default", UID: "pvc-2", DeletionTimestamp: "2026-01-01T00:00:00Z"},
				Status:   abi.PersistentVolumeClaimStatus{Phase: "Bound", Capacity: map[string]string{"storage": "1Gi"}},
			}},
			StorageClasses: []abi.StorageClass{{Metadata: abi.ObjectMeta{Name: "fast"}, Provisioner: "csi.example.com", AllowVolumeExpansion: true}},
		},
	}
}

func sampleResponse() *abi.Response {
	return &abi.Response{Status: abi.StatusOK, Result: &abi.Result{
		RequeueAfterMillis: 1500,
		Message:            "ok",
		Actions: []abi.Action{
			{Type: abi.ActionUpdateOwnerReferences, Target: abi.ObjectRef{Kind: abi.KindPersistentVolumeClaim, Namespace: "default", Name: "data-web-2", UID: "pvc-2"},
				OwnerReferences: &abi.OwnerReferencesChange{Remove: []string{"old"}, Add: []abi.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-2", UID: "pod-2", Controller: true, BlockOwnerDeletion: true}}}},
			{Type: abi.ActionSetPartition, Target: abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: "default", Name: "web", UID: "set-1"}, Partition: ptr(int32(0))},
			{Type: abi.ActionDeleteVolume, Target: abi.ObjectRef{Kind: abi.KindPersistentVolume, Name: "pv-1", UID: "pv-1"},
				Volume: &abi.VolumeDelete{Driver: "d", VolumeHandle: "h", Secrets: &abi.SecretReference{Namespace: "ns", Name: "s"}}},
			{Type: abi.ActionEvent, Target: abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: "default", Name: "web", UID: "set-1"},
				Event: &abi.Event{Type: abi.EventWarning, Reason: "R", Message: "m"}},
		},
	}}
}

func TestRoundTrip(t *testing.T) {
	req := sampleRequest()
	b, err := req.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := abi.DecodeReconcileRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, req) {
		t.Fatalf("request round trip differs:\n got %+v\nwant %+v", got, req)
	}

	resp := sampleResponse()
	b, err = resp.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	gotResp, err := abi.DecodeResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotResp, resp) {
		t.Fatalf("response round trip differs:\n got %+v\nwant %+v", gotResp, resp)
	}

	man := &abi.Manifest{Name: "m", Version: "1", ABIVersion: abi.Current.String(), Subject: abi.SubjectPersistentVolume,
		Hooks: []string{abi.HookReconcile}, Capabilities: []abi.Capability{{Action: abi.ActionDeleteVolume}}}
	b, err = man.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	gotMan, err := abi.DecodeManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotMan, man) {
		t.Fatalf("manifest round trip differs:\n got %+v\nwant %+v", gotMan, man)
	}
}

func TestDecodeRejects(t *testing.T) {
	good, err := sampleResponse().MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"truncated", good[:len(good)/2]},
		{"trailing bytes", append(append([]byte{}, good...), 0xc0)},
		{"not a map", []byte{0x01}},
		{"array claims more elements than bytes", []byte{0x81, 0xa6, 'r', 'e', 's', 'u', 'l', 't', 0x81, 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's', 0xdd, 0xff, 0xff, 0xff, 0xff}},
		{"wrong type for status", []byte{0x81, 0xa6, 's', 't', 'a', 't', 'u', 's', 0xa1, 'x'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := abi.DecodeResponse(tc.in)
			if !errors.Is(err, abi.ErrDecode) {
				t.Fatalf("DecodeResponse(%x) error = %v, want ErrDecode", tc.in, err)
			}
		})
	}
}

func TestUnknownFieldsAreSkipped(t *testing.T) {
	// A newer guest may add fields within a minor version.
	b := []byte{0x82, 0xa6, 's', 't', 'a', 't', 'u', 's', 0x02, 0xa3, 'n', 'e', 'w', 0x93, 0x01, 0x02, 0x03}
	got, err := abi.DecodeResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != abi.StatusFailed {
		t.Fatalf("status = %v, want failed", got.Status)
	}
}

func TestStatusError(t *testing.T) {
	for _, tc := range []struct {
		s    abi.Status
		want error
	}{
		{abi.StatusBadInput, abi.ErrBadInput},
		{abi.StatusFailed, abi.ErrFailed},
		{abi.StatusPanic, abi.ErrPanic},
		{abi.StatusNoHook, abi.ErrNoHook},
		{abi.Status(99), abi.ErrStatus},
	} {
		err := abi.StatusError(tc.s, "boom")
		if !errors.Is(err, tc.want) {
			t.Errorf("StatusError(%v) = %v, want %v", tc.s, err, tc.want)
		}
	}
	if err := abi.StatusError(abi.StatusOK, "ignored"); err != nil {
		t.Errorf("StatusError(ok) = %v, want nil", err)
	}
}

func TestPackPtrLen(t *testing.T) {
	p, l := abi.UnpackPtrLen(abi.PackPtrLen(0xdeadbeef, 0x12345678))
	if p != 0xdeadbeef || l != 0x12345678 {
		t.Fatalf("unpack = %#x %#x", p, l)
	}
}

func TestParseVersionExport(t *testing.T) {
	for _, tc := range []struct {
		name    string
		want    abi.Version
		ok, err bool
	}{
		{abi.VersionExport, abi.Current, true, false},
		{"kubeplug_abi_version_2_0_0", abi.Version{Major: 2}, true, false},
		{"kubeplug_abi_version_1_x_0", abi.Version{}, true, true},
		{"kubeplug_abi_version_1_0", abi.Version{}, true, true},
		{"kubeplug_malloc", abi.Version{}, false, false},
	} {
		v, ok, err := abi.ParseVersionExport(tc.name)
		if ok != tc.ok || (err != nil) != tc.err || v != tc.want {
			t.Errorf("ParseVersionExport(%q) = %v, %v, %v", tc.name, v, ok, err)
		}
	}
	if (abi.Version{Major: 1, Minor: abi.VersionMinor + 1}).Compatible() {
		t.Error("a newer minor must not be compatible")
	}
	if (abi.Version{Major: 2}).Compatible() {
		t.Error("another major must not be compatible")
	}
}

func TestCapabilityAllows(t *testing.T) {
	c := abi.Capability{Action: abi.ActionDeleteObject, Resources: []string{"persistentvolumes"}}
	if !c.Allows(abi.ActionDeleteObject, "persistentvolumes") {
		t.Error("listed resource refused")
	}
	if c.Allows(abi.ActionDeleteObject, "persistentvolumeclaims") {
		t.Error("unlisted resource allowed")
	}
	if c.Allows(abi.ActionEvent, "persistentvolumes") {
		t.Error("other action allowed")
	}
	if !(abi.Capability{Action: abi.ActionDeleteVolume}).Allows(abi.ActionDeleteVolume, "") {
		t.Error("deleteVolume needs no resource")
	}
}

func TestCountResponseActions(t *testing.T) {
	enc := func(r *abi.Response) []byte {
		b, err := r.MarshalMsg(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tt := range []struct {
		name string
		b    []byte
		want int
	}{
		{"no result", enc(&abi.Response{Status: abi.StatusOK}), 0},
		{"no actions", enc(&abi.Response{Result: &abi.Result{Message: "m"}}), 0},
		{"three", enc(&abi.Response{Result: &abi.Result{Actions: make([]abi.Action, 3), RequeueAfterMillis: 5}}), 3},
		{"900000 empty actions in a byte each", append([]byte{0x81, 0xa6, 'r', 'e', 's', 'u', 'l', 't', 0x81, 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's', 0xdd, 0, 0x0d, 0xbb, 0xa0}, bytes.Repeat([]byte{0x80}, 900_000)...), 900_000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := abi.CountResponseActions(tt.b)
			if err != nil || n != tt.want {
				t.Fatalf("CountResponseActions = %d, %v; want %d", n, err, tt.want)
			}
		})
	}
	if _, err := abi.CountResponseActions([]byte{0x81, 0xa6, 'r'}); !errors.Is(err, abi.ErrDecode) {
		t.Fatalf("truncated: err = %v, want ErrDecode", err)
	}
}

func TestCountElements(t *testing.T) {
	enc := func(r *abi.Response) []byte {
		b, err := r.MarshalMsg(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// {result: {actions: [{ownerReferences: {add: [{} x 1000]}}]}}
	nested := append([]byte{0x81, 0xa6, 'r', 'e', 's', 'u', 'l', 't', 0x81, 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's', 0x91, 0x81, 0xaf}, "ownerReferences"...)
	nested = append(append(nested, 0x81, 0xa3, 'a', 'd', 'd', 0xdc, 0x03, 0xe8), bytes.Repeat([]byte{0x80}, 1000)...)
	for _, tt := range []struct {
		name string
		b    []byte
		want int
	}{
		{"a scalar", []byte{0x05}, 0},
		{"status only", enc(&abi.Response{}), 1},                // a map of one: status
		{"nested empty maps", nested, 1 + 1 + 1 + 1 + 1 + 1000}, // five maps and arrays of one, then the 1000
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := abi.CountElements(tt.b)
			if err != nil || n != tt.want {
				t.Fatalf("CountElements = %d, %v; want %d", n, err, tt.want)
			}
		})
	}
	if _, err := abi.CountElements([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}); !errors.Is(err, abi.ErrDecode) {
		t.Fatalf("an array header with no elements behind it: err = %v, want ErrDecode", err)
	}
}
