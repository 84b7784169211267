package sdk_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

func TestActions(t *testing.T) {
	set := sdktest.StatefulSet("web", 1)
	claim := sdktest.Claim("data", set, 0)
	pv := sdktest.PersistentVolume("pv-1")
	setRef, claimRef, pvRef := sdk.RefOf(set), sdk.RefOf(claim), sdk.RefOf(pv)
	owner := sdk.NewControllerRef(set)
	class := "gold"
	status := abi.VolumeClaimUpdateStatus{ObservedGeneration: 2, VolumeClaimTemplates: []abi.VolumeClaimTemplateStatus{{TemplateName: "data", CompatibleReplicas: 1}}}
	apply := abi.ClaimApply{Labels: map[string]string{"a": "b"}, VolumeAttributesClassName: &class}
	volume := abi.VolumeDelete{Driver: "csi.example.com", VolumeHandle: "vol-1", Secrets: &abi.SecretReference{Namespace: "kube-system", Name: "creds"}}
	partition, user := int32(3), int32(1)

	tests := []struct {
		name string
		got  abi.Action
		want abi.Action
	}{
		{"owner references", sdk.UpdateOwnerReferences(claimRef, []string{"old"}, owner),
			abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef, OwnerReferences: &abi.OwnerReferencesChange{Remove: []string{"old"}, Add: []abi.OwnerReference{owner}}}},
		{"add finalizer", sdk.AddFinalizer(pvRef, "f"), abi.Action{Type: abi.ActionAddFinalizer, Target: pvRef, Finalizer: "f"}},
		{"remove finalizer", sdk.RemoveFinalizer(pvRef, "f"), abi.Action{Type: abi.ActionRemoveFinalizer, Target: pvRef, Finalizer: "f"}},
		{"delete object", sdk.DeleteObject(claimRef), abi.Action{Type: abi.ActionDeleteObject, Target: claimRef}},
		{"apply claim", sdk.ApplyClaim(claimRef, apply), abi.Action{Type: abi.ActionApplyClaim, Target: claimRef, Claim: &apply}},
		{"set partition", sdk.SetPartition(setRef, 3), abi.Action{Type: abi.ActionSetPartition, Target: setRef, Partition: &partition}},
		{"hold partition", sdk.HoldPartition(setRef, 3, &user), abi.Action{Type: abi.ActionSetPartition, Target: setRef, Partition: &partition, Hold: &abi.PartitionHold{UserPartition: &user}}},
		{"hold partition, user none", sdk.HoldPartition(setRef, 3, nil), abi.Action{Type: abi.ActionSetPartition, Target: setRef, Partition: &partition, Hold: &abi.PartitionHold{}}},
		{"claim update status", sdk.UpdateClaimUpdateStatus(setRef, status), abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: setRef, ClaimUpdateStatus: &status}},
		{"delete volume", sdk.DeleteVolume(pvRef, volume), abi.Action{Type: abi.ActionDeleteVolume, Target: pvRef, Volume: &volume}},
		{"event", sdk.Event(setRef, abi.EventNormal, "R", "m"), abi.Action{Type: abi.ActionEvent, Target: setRef, Event: &abi.Event{Type: "Normal", Reason: "R", Message: "m"}}},
		{"warning", sdk.Warning(setRef, "R", "m"), abi.Action{Type: abi.ActionEvent, Target: setRef, Event: &abi.Event{Type: "Warning", Reason: "R", Message: "m"}}},
		{"normal", sdk.Normal(setRef, "R", "m"), abi.Action{Type: abi.ActionEvent, Target: setRef, Event: &abi.Event{Type: "Normal", Reason: "R", Message: "m"}}},
		{"apply", sdk.Apply(setRef, []byte(`{"spec":{}}`)), abi.Action{Type: abi.ActionApply, Target: setRef, Object: abi.RawJSON(`{"spec":{}}`)}},
		{"create", sdk.Create(claimRef, []byte(`{"kind":"PersistentVolumeClaim"}`)), abi.Action{Type: abi.ActionCreate, Target: claimRef, Object: abi.RawJSON(`{"kind":"PersistentVolumeClaim"}`)}},
		{"apply status", sdk.ApplyStatus(setRef, []byte(`{"status":{}}`)), abi.Action{Type: abi.ActionApplyStatus, Target: setRef, Object: abi.RawJSON(`{"status":{}}`)}},
	}
	var covered []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Fatalf("got %+v, want %+v", tt.got, tt.want)
			}
			// What the host reads is the encoded action.
			b, err := tt.got.MarshalMsg(nil)
			if err != nil {
				t.Fatal(err)
			}
			var back abi.Action
			if _, err := back.UnmarshalMsg(b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tt.want) {
				t.Errorf("after the codec: %+v, want %+v", back, tt.want)
			}
		})
		covered = append(covered, tt.got.Type)
	}
	for _, typ := range abi.ActionTypes() {
		if !slices.Contains(covered, typ) {
			t.Errorf("no constructor tested for action type %q", typ)
		}
	}
}

func TestResultABI(t *testing.T) {
	tests := []struct {
		name   string
		after  string
		millis int64
	}{
		{"none", "0s", 0},
		{"whole", "1.5s", 1500},
		{"rounded up", "1.0000001s", 1001},
		{"never zero", "1ns", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustDuration(t, tt.after)
			got, err := sdk.Result{RequeueAfter: d, Message: "m"}.ABI()
			if err != nil {
				t.Fatal(err)
			}
			if got.RequeueAfterMillis != tt.millis || got.Message != "m" {
				t.Errorf("got %+v, want %d ms", got, tt.millis)
			}
		})
	}
	if _, err := (sdk.Result{RequeueAfter: -1}).ABI(); err == nil {
		t.Error("a negative RequeueAfter was accepted")
	}
}

// TestUpdateOwnerReferencesCopiesAdd: the action keeps its own copy of the
// references to add, whatever their number, so a module that reuses its
// slice for the next claim does not change the actions already made.
func TestUpdateOwnerReferencesCopiesAdd(t *testing.T) {
	set := sdktest.StatefulSet("web", 1)
	claimRef := sdk.RefOf(sdktest.Claim("data", set, 0))
	owner := sdk.NewControllerRef(set)
	other := abi.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "pod-uid"}
	for _, n := range []int{1, 2} {
		add := []abi.OwnerReference{owner, other}[:n]
		want := slices.Clone(add)
		a := sdk.UpdateOwnerReferences(claimRef, nil, add...)
		add[0].UID = "changed"
		if !reflect.DeepEqual(a.OwnerReferences.Add, want) {
			t.Errorf("%d references: the action holds %+v after the caller changed its slice, want %+v", n, a.OwnerReferences.Add, want)
		}
	}
	if a := sdk.UpdateOwnerReferences(claimRef, []string{"old"}); a.OwnerReferences.Add != nil {
		t.Errorf("no reference to add: Add is %+v, want nil (omitted on the wire)", a.OwnerReferences.Add)
	}
}
