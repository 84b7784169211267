package actions_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

func TestValidateRefuses(t *testing.T) {
	onlyFinalizersOnClaims := abi.Manifest{Name: "narrow", Capabilities: []abi.Capability{
		{Action: abi.ActionAddFinalizer, Resources: []string{"persistentvolumeclaims"}},
	}}
	otherPV := volumeRef()
	otherPV.UID = "some-other-uid"
	set := setRef()
	pvs := func(r abi.ObjectRef) abi.ObjectRef { r.Namespace = "default"; return r }(volumeRef())
	deletingClaim := setRequest()
	deletingClaim.StatefulSet.Claims[1].Metadata.DeletionTimestamp = "2024-06-01T12:00:00Z"
	onDelete := setRequest()
	onDelete.StatefulSet.Set.Spec.UpdateStrategy = abi.StatefulSetUpdateStrategy{Type: "OnDelete"}
	hostPath := volumeRequest()
	hostPath.PersistentVolume.Volume.Spec.Source = "hostPath"
	hostPath.PersistentVolume.Volume.Spec.CSI = nil

	tests := []struct {
		name     string
		manifest abi.Manifest
		req      *abi.ReconcileRequest
		action   abi.Action
		why      string
	}{
		{"unknown type", everything(), setRequest(), abi.Action{Type: "scaleUp", Target: set}, `unknown action type "scaleUp"`},
		{"unknown kind", everything(), setRequest(), abi.Action{Type: abi.ActionDeleteObject, Target: abi.ObjectRef{Kind: "Secret", Namespace: "default", Name: "s", UID: "u"}}, `unknown target kind "Secret"`},
		{"type not allowed", onlyFinalizersOnClaims, setRequest(), abi.Action{Type: abi.ActionDeleteObject, Target: claimRef(0)}, "lacks the capability {action: deleteObject, resources: [persistentvolumeclaims]}"},
		{"resource not allowed", onlyFinalizersOnClaims, setRequest(), abi.Action{Type: abi.ActionAddFinalizer, Target: podRef(), Finalizer: "x.io/y"}, "lacks the capability {action: addFinalizer, resources: [pods]}"},
		{"no capabilities", abi.Manifest{Name: "none"}, volumeRequest(), abi.Action{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}}, "lacks the capability {action: deleteVolume"},

		{"target uid differs", everything(), volumeRequest(), abi.Action{Type: abi.ActionDeleteObject, Target: otherPV}, "not an object of the reconcile input"},
		{"target uid empty", everything(), setRequest(), abi.Action{Type: abi.ActionDeleteObject, Target: func() abi.ObjectRef { r := claimRef(0); r.UID = ""; return r }()}, "not an object of the reconcile input"},
		{"target namespace differs", everything(), volumeRequest(), abi.Action{Type: abi.ActionDeleteObject, Target: pvs}, "not an object of the reconcile input"},
		{"target name differs", everything(), setRequest(), abi.Action{Type: abi.ActionDeleteObject, Target: func() abi.ObjectRef { r := claimRef(0); r.Name = "data-web-9"; return r }()}, "not an object of the reconcile input"},
		{"target kind differs", everything(), setRequest(), abi.Action{Type: abi.ActionDeleteObject, Target: func() abi.ObjectRef { r := podRef(); r.Kind = abi.KindPersistentVolumeClaim; return r }()}, "not an object of the reconcile input"},
		{"volume target in a statefulset input", everything(), setRequest(), abi.Action{Type: abi.ActionDeleteObject, Target: volumeRef()}, "not an object of the reconcile input"},
		{"claim template is not an object", everything(), func() *abi.ReconcileRequest {
			r := setRequest()
			r.StatefulSet.Set.Spec.VolumeClaimTemplates = []abi.PersistentVolumeClaim{{Metadata: meta("default", "tmpl", "tmpl-uid", "")}}
			return r
		}(), abi.Action{Type: abi.ActionDeleteObject, Target: abi.ObjectRef{Kind: abi.KindPersistentVolumeClaim, Namespace: "default", Name: "tmpl", UID: "tmpl-uid"}}, "not an object of the reconcile input"},
		{"nil input", everything(), nil, abi.Action{Type: abi.ActionDeleteObject, Target: set}, "not an object of the reconcile input"},

		{"owner references missing", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(0)}, "ownerReferences is missing"},
		{"owner references empty", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(0), OwnerReferences: &abi.OwnerReferencesChange{}}, "neither removes nor adds"},
		{"owner reference incomplete", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(0), OwnerReferences: &abi.OwnerReferencesChange{Add: []abi.OwnerReference{{Kind: "Pod", Name: "web-0", UID: "pod-0"}}}}, "add[0]: needs apiVersion"},
		{"owner reference twice", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(1), OwnerReferences: &abi.OwnerReferencesChange{Add: []abi.OwnerReference{setOwner, setOwner}}}, "lists uid \"set-uid\" twice"},
		{"empty uid removed", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(0), OwnerReferences: &abi.OwnerReferencesChange{Remove: []string{""}}}, "empty uid"},

		{"owner reference to another set's pod", everything(), setRequest(), ownerAdd(abi.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "db-0", UID: "db-pod-0"}), "neither the subject StatefulSet nor one of its pods"},
		{"owner reference to a StorageClass", everything(), setRequest(), ownerAdd(abi.OwnerReference{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass", Name: "fast", UID: "class-uid"}), "neither the subject StatefulSet nor one of its pods"},
		{"owner reference to a claim", everything(), setRequest(), ownerAdd(abi.OwnerReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: "data-web-0", UID: "claim-0"}), "neither the subject"},
		{"owner reference to the set under another apiVersion", everything(), setRequest(), ownerAdd(abi.OwnerReference{APIVersion: "apps/v1beta1", Kind: "StatefulSet", Name: "web", UID: "set-uid"}), "neither the subject"},
		{"owner reference to the set's uid under another name", everything(), setRequest(), ownerAdd(abi.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "set-uid"}), "neither the subject"},
		{"owner reference in a volume's input", everything(), volumeRequest(), abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: volumeRef(), OwnerReferences: &abi.OwnerReferencesChange{Add: []abi.OwnerReference{setOwner}}}, "neither the subject"},
		{"owner reference on a cluster-scoped object", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: classRef(), OwnerReferences: &abi.OwnerReferencesChange{Add: []abi.OwnerReference{setOwner}}}, "in the object's namespace"},
		{"owner reference with a bad apiVersion", everything(), setRequest(), ownerAdd(abi.OwnerReference{APIVersion: "a/b/c", Kind: "StatefulSet", Name: "web", UID: "set-uid"}), `apiVersion "a/b/c" is not group/version`},
		{"owner reference with a bad name", everything(), setRequest(), ownerAdd(abi.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "..", UID: "set-uid"}), `name ".."`},
		{"owner reference to an Event", everything(), setRequest(), ownerAdd(abi.OwnerReference{APIVersion: "v1", Kind: "Event", Name: "e", UID: "e"}), "an Event cannot own"},

		{"finalizer empty", everything(), setRequest(), abi.Action{Type: abi.ActionAddFinalizer, Target: claimRef(0)}, "finalizer is empty"},
		{"finalizer malformed", everything(), setRequest(), abi.Action{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "not a/valid/name"}, "not a qualified name"},
		{"finalizer on object being deleted", everything(), deletingClaim, abi.Action{Type: abi.ActionAddFinalizer, Target: claimRef(1), Finalizer: "kubeplug.dev/x"}, "being deleted"},
		{"remove empty finalizer", everything(), setRequest(), abi.Action{Type: abi.ActionRemoveFinalizer, Target: claimRef(0)}, "finalizer is empty"},

		{"apply on a pod", everything(), setRequest(), abi.Action{Type: abi.ActionApplyClaim, Target: podRef(), Claim: &abi.ClaimApply{Labels: map[string]string{"a": "b"}}}, "only to a PersistentVolumeClaim"},
		{"apply without claim", everything(), setRequest(), abi.Action{Type: abi.ActionApplyClaim, Target: claimRef(0)}, "claim is missing"},
		{"apply of nothing", everything(), setRequest(), abi.Action{Type: abi.ActionApplyClaim, Target: claimRef(0), Claim: &abi.ClaimApply{}}, "sets no field"},
		{"apply of a bad quantity", everything(), setRequest(), abi.Action{Type: abi.ActionApplyClaim, Target: claimRef(0), Claim: &abi.ClaimApply{Resources: &abi.ResourceRequirements{Requests: map[string]string{"storage": "ten gigs"}}}}, `requests[storage] "ten gigs" is not a quantity`},
		{"apply lowering the storage request", everything(), setRequest(), abi.Action{Type: abi.ActionApplyClaim, Target: claimRef(0), Claim: &abi.ClaimApply{Resources: &abi.ResourceRequirements{Requests: map[string]string{"storage": "1023Mi"}}}},
			"claim.resources.requests[storage] 1023Mi is lower than the claim's current request 1Gi, which kubeplug did not set (it is not annotation kubeplug.dev/applied-storage): kubeplug never shrinks a claim's request set by hand or at creation"},
		{"apply lowering the storage request with a label", everything(), setRequest(), abi.Action{Type: abi.ActionApplyClaim, Target: claimRef(0), Claim: &abi.ClaimApply{Labels: map[string]string{"tier": "gold"}, Resources: &abi.ResourceRequirements{Requests: map[string]string{"storage": "0"}}}},
			"never shrinks"},
		{"apply of a bad label", everything(), setRequest(), abi.Action{Type: abi.ActionApplyClaim, Target: claimRef(0), Claim: &abi.ClaimApply{Labels: map[string]string{"app": "no spaces"}}}, `label "app" value`},
		{"apply of a bad annotation", everything(), setRequest(), abi.Action{Type: abi.ActionApplyClaim, Target: claimRef(0), Claim: &abi.ClaimApply{Annotations: map[string]string{"a b": ""}}}, `annotation key "a b"`},

		{"partition on a claim", everything(), setRequest(), abi.Action{Type: abi.ActionSetPartition, Target: claimRef(0), Partition: new(int32(1))}, "only to a StatefulSet"},
		{"partition missing", everything(), setRequest(), abi.Action{Type: abi.ActionSetPartition, Target: set}, "partition is missing"},
		{"partition negative", everything(), setRequest(), abi.Action{Type: abi.ActionSetPartition, Target: set, Partition: new(int32(-1))}, "partition -1 is negative"},
		{"partition under OnDelete", everything(), onDelete, abi.Action{Type: abi.ActionSetPartition, Target: set, Partition: new(int32(0))}, "updateStrategy is OnDelete"},
		{"hold with a negative user partition", everything(), setRequest(), abi.Action{Type: abi.ActionSetPartition, Target: set, Partition: new(int32(1)), Hold: &abi.PartitionHold{UserPartition: new(int32(-1))}}, "hold.userPartition -1 is negative"},

		{"status of a set", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: set, ClaimUpdateStatus: &abi.VolumeClaimUpdateStatus{}}, "only to a VolumeClaimUpdate"},
		{"status missing", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: claimUpdateRef()}, "claimUpdateStatus is missing"},
		{"status template unnamed", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: claimUpdateRef(), ClaimUpdateStatus: &abi.VolumeClaimUpdateStatus{VolumeClaimTemplates: []abi.VolumeClaimTemplateStatus{{}}}}, "templateName is empty"},
		{"status bad capacity", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: claimUpdateRef(), ClaimUpdateStatus: &abi.VolumeClaimUpdateStatus{VolumeClaimTemplates: []abi.VolumeClaimTemplateStatus{{TemplateName: "data", TotalCapacity: map[string]string{"storage": "x"}}}}}, "totalCapacity[storage]"},
		{"status bad condition", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: claimUpdateRef(), ClaimUpdateStatus: &abi.VolumeClaimUpdateStatus{Conditions: []abi.Condition{{Type: "Ready", Status: "yes"}}}}, `status "yes"`},
		{"status negative held partition", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: claimUpdateRef(), ClaimUpdateStatus: &abi.VolumeClaimUpdateStatus{HeldPartition: new(int32(-3))}}, "heldPartition -3 is negative"},
		{"status negative user partition", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: claimUpdateRef(), ClaimUpdateStatus: &abi.VolumeClaimUpdateStatus{UserPartition: new(int32(-1))}}, "userPartition -1 is negative"},
		{"status bad time", everything(), setRequest(), abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: claimUpdateRef(), ClaimUpdateStatus: &abi.VolumeClaimUpdateStatus{Conditions: []abi.Condition{{Type: "Ready", Status: "True", LastTransitionTime: "yesterday"}}}}, "not RFC 3339"},

		{"volume delete on a claim", everything(), volumeRequest(), abi.Action{Type: abi.ActionDeleteVolume, Target: claimRef(0), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}}, "only to a PersistentVolume"},
		{"volume delete without volume", everything(), volumeRequest(), abi.Action{Type: abi.ActionDeleteVolume, Target: volumeRef()}, "volume is missing"},
		{"volume delete of a hostPath volume", everything(), hostPath, abi.Action{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}}, `neither a CSI volume nor an in-tree volume that CSI migration covers (its source is "hostPath")`},
		{"volume delete of another driver's volume", everything(), volumeRequest(), abi.Action{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: "other.csi", VolumeHandle: handle}}, "is not the PersistentVolume's"},
		{"volume delete of another handle", everything(), volumeRequest(), abi.Action{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: "vol-2"}}, "is not the PersistentVolume's"},

		{"event missing", everything(), setRequest(), abi.Action{Type: abi.ActionEvent, Target: set}, "event is missing"},
		{"event type", everything(), setRequest(), abi.Action{Type: abi.ActionEvent, Target: set, Event: &abi.Event{Type: "Error", Reason: "R"}}, `event type "Error"`},
		{"event reason", everything(), setRequest(), abi.Action{Type: abi.ActionEvent, Target: set, Event: &abi.Event{Type: abi.EventNormal}}, "reason is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := actions.Validate(tt.manifest, tt.req, tt.action)
			require.ErrorIs(t, err, actions.ErrRefused)
			require.ErrorContains(t, err, tt.why)
			require.ErrorContains(t, err, tt.action.Type+" on "+tt.action.Target.Kind, "the error names the action")
		})
	}
}

func TestValidateResolvesTargets(t *testing.T) {
	sreq, vreq := setRequest(), volumeRequest()
	s := sreq.StatefulSet
	tests := []struct {
		req    *abi.ReconcileRequest
		ref    abi.ObjectRef
		rv     string
		object any
	}{
		{sreq, setRef(), "10", s.Set},
		{sreq, podRef(), "30", &s.Pods[0]},
		{sreq, claimRef(1), "21", &s.Claims[1]},
		{sreq, classRef(), "40", &s.StorageClasses[0]},
		{sreq, claimUpdateRef(), "50", s.ClaimUpdate},
		{vreq, volumeRef(), "5", vreq.PersistentVolume.Volume},
		{vreq, claimRef(0), "20", vreq.PersistentVolume.Claim},
		{vreq, classRef(), "40", vreq.PersistentVolume.StorageClass},
	}
	for _, tt := range tests {
		t.Run(tt.req.Subject+" "+tt.ref.Kind, func(t *testing.T) {
			got, err := actions.Validate(everything(), tt.req, abi.Action{Type: abi.ActionDeleteObject, Target: tt.ref})
			require.NoError(t, err)
			require.Equal(t, tt.ref, got.Ref())
			require.Equal(t, tt.rv, got.ResourceVersion)
			require.Same(t, tt.object, got.Object)
		})
	}

	got, err := actions.Validate(everything(), sreq, abi.Action{Type: abi.ActionRemoveFinalizer, Target: claimRef(0), Finalizer: "x"})
	require.NoError(t, err)
	require.Equal(t, []abi.OwnerReference{setOwner}, got.OwnerReferences)
	require.Equal(t, []string{"kubernetes.io/pvc-protection"}, got.Finalizers)
	require.Equal(t, "PersistentVolumeClaim default/data-web-0", got.String())
}

func TestValidateCapabilities(t *testing.T) {
	m := abi.Manifest{Name: "m", Capabilities: []abi.Capability{
		{Action: abi.ActionRemoveFinalizer, Resources: []string{"persistentvolumes"}},
		{Action: abi.ActionDeleteVolume},
	}}
	_, err := actions.Validate(m, volumeRequest(), abi.Action{Type: abi.ActionRemoveFinalizer, Target: volumeRef(), Finalizer: "kubernetes.io/pv-protection"})
	require.NoError(t, err)
	_, err = actions.Validate(m, volumeRequest(), abi.Action{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}})
	require.NoError(t, err, "deleteVolume needs the type only")
	_, err = actions.Validate(m, volumeRequest(), abi.Action{Type: abi.ActionRemoveFinalizer, Target: claimRef(0), Finalizer: "kubernetes.io/pvc-protection"})
	require.ErrorIs(t, err, actions.ErrRefused)
}

// ownerAdd adds refs to claim data-web-1.
func ownerAdd(refs ...abi.OwnerReference) abi.Action {
	return abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(1), OwnerReferences: &abi.OwnerReferencesChange{Add: refs}}
}
