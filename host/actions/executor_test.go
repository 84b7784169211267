package actions_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

func executor(c *fakeCluster, v *fakeVolumes) *actions.Executor {
	e := &actions.Executor{Cluster: c, Module: "policy"}
	if v != nil {
		e.Volumes = v
	}
	return e
}

func outcomes(r actions.Report) []actions.Outcome {
	var out []actions.Outcome
	for _, a := range r.Actions {
		out = append(out, a.Outcome)
	}
	return out
}

func mergePatch(kind, ns, name, data string, sub ...string) call {
	return call{Op: "patch", Kind: kind, Namespace: ns, Name: name, PatchType: types.MergePatchType, Data: data, FieldManager: "kubeplug", Subresource: sub}
}

func TestExecuteWrites(t *testing.T) {
	const claim0 = `{"metadata":{"uid":"claim-0","resourceVersion":"20",`
	secrets := &abi.SecretReference{Namespace: "kube-system", Name: "provisioner"}
	tests := []struct {
		name    string
		req     *abi.ReconcileRequest
		action  abi.Action
		want    call
		volumes []call
	}{{
		name:   "owner reference added",
		req:    setRequest(),
		action: abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(1), OwnerReferences: &abi.OwnerReferencesChange{Add: []abi.OwnerReference{setOwner}}},
		want: mergePatch("PersistentVolumeClaim", "default", "data-web-1",
			`{"metadata":{"uid":"claim-1","resourceVersion":"21","ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"set-uid","controller":true,"blockOwnerDeletion":true}]}}`),
	}, {
		name:   "last owner reference removed",
		req:    setRequest(),
		action: abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(0), OwnerReferences: &abi.OwnerReferencesChange{Remove: []string{"set-uid"}}},
		want:   mergePatch("PersistentVolumeClaim", "default", "data-web-0", claim0+`"ownerReferences":null}}`),
	}, {
		name: "owner reference replaced by uid, others kept in order",
		req:  setRequest(),
		action: abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(0), OwnerReferences: &abi.OwnerReferencesChange{Add: []abi.OwnerReference{
			{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "pod-0"},
			{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid"},
		}}},
		want: mergePatch("PersistentVolumeClaim", "default", "data-web-0", claim0+
			`"ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"set-uid"},{"apiVersion":"v1","kind":"Pod","name":"web-0","uid":"pod-0"}]}}`),
	}, {
		name:   "finalizer added",
		req:    setRequest(),
		action: abi.Action{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "kubeplug.dev/protect"},
		want:   mergePatch("PersistentVolumeClaim", "default", "data-web-0", claim0+`"finalizers":["kubernetes.io/pvc-protection","kubeplug.dev/protect"]}}`),
	}, {
		name:   "last finalizer removed",
		req:    setRequest(),
		action: abi.Action{Type: abi.ActionRemoveFinalizer, Target: claimRef(0), Finalizer: "kubernetes.io/pvc-protection"},
		want:   mergePatch("PersistentVolumeClaim", "default", "data-web-0", claim0+`"finalizers":null}}`),
	}, {
		name:   "object deleted",
		req:    setRequest(),
		action: abi.Action{Type: abi.ActionDeleteObject, Target: podRef()},
		want:   call{Op: "delete", Kind: "Pod", Namespace: "default", Name: "web-0", UID: "pod-0", RV: "30"},
	}, {
		name:   "claim resized",
		req:    setRequest(),
		action: abi.Action{Type: abi.ActionApplyClaim, Target: claimRef(0), Claim: &abi.ClaimApply{Resources: &abi.ResourceRequirements{Requests: map[string]string{"storage": "2048Mi"}}}},
		want: call{Op: "patch", Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data-web-0", PatchType: types.ApplyPatchType, FieldManager: "kubeplug",
			Data: `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data-web-0","namespace":"default","uid":"claim-0","resourceVersion":"20","annotations":{"kubeplug.dev/applied-storage":"2Gi"}},"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`},
	}, {
		name: "claim labelled and class changed",
		req:  setRequest(),
		action: abi.Action{Type: abi.ActionApplyClaim, Target: claimRef(0), Claim: &abi.ClaimApply{
			Labels: map[string]string{"app": "web", "tier": "gold"}, Annotations: map[string]string{"note": "x"}, VolumeAttributesClassName: new("platinum"),
		}},
		want: call{Op: "patch", Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data-web-0", PatchType: types.ApplyPatchType, FieldManager: "kubeplug",
			Data: `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data-web-0","namespace":"default","uid":"claim-0","resourceVersion":"20","labels":{"app":"web","tier":"gold"},"annotations":{"note":"x"}},"spec":{"volumeAttributesClassName":"platinum"}}`},
	}, {
		name:   "partition set",
		req:    setRequest(),
		action: abi.Action{Type: abi.ActionSetPartition, Target: setRef(), Partition: new(int32(0))},
		want:   mergePatch("StatefulSet", "default", "web", `{"metadata":{"uid":"set-uid","resourceVersion":"10"},"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`),
	}, {
		name:   "partition held, with the record in the same patch",
		req:    setRequest(),
		action: abi.Action{Type: abi.ActionSetPartition, Target: setRef(), Partition: new(int32(2)), Hold: &abi.PartitionHold{UserPartition: new(int32(0))}},
		want: mergePatch("StatefulSet", "default", "web",
			`{"metadata":{"uid":"set-uid","resourceVersion":"10","annotations":{"kubeplug.dev/held-partition":"2","kubeplug.dev/user-partition":"0"}},"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}`),
	}, {
		name:   "hold released: the partition and the record's removal in one patch",
		req:    heldRequest(),
		action: abi.Action{Type: abi.ActionSetPartition, Target: setRef(), Partition: new(int32(0))},
		want: mergePatch("StatefulSet", "default", "web",
			`{"metadata":{"uid":"set-uid","resourceVersion":"10","annotations":{"kubeplug.dev/held-partition":null,"kubeplug.dev/user-partition":null}},"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`),
	}, {
		name:   "record removed where the user moved the partition",
		req:    heldRequest(),
		action: abi.Action{Type: abi.ActionSetPartition, Target: setRef(), Partition: new(int32(1))},
		want: mergePatch("StatefulSet", "default", "web",
			`{"metadata":{"uid":"set-uid","resourceVersion":"10","annotations":{"kubeplug.dev/held-partition":null,"kubeplug.dev/user-partition":null}}}`),
	}, {
		name: "status replaced",
		req:  setRequest(),
		action: abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: claimUpdateRef(), ClaimUpdateStatus: &abi.VolumeClaimUpdateStatus{
			ObservedGeneration:   3,
			VolumeClaimTemplates: []abi.VolumeClaimTemplateStatus{{TemplateName: "data", CompatibleReplicas: 1, UpdatingReplicas: 1, TotalCapacity: map[string]string{"storage": "3072Mi"}}},
		}},
		want: mergePatch("VolumeClaimUpdate", "default", "web-update",
			`{"metadata":{"uid":"vcu-uid","resourceVersion":"50"},"status":{"conditions":null,"heldPartition":null,"observedGeneration":3,"userPartition":null,"volumeClaimTemplates":[{"templateName":"data","compatibleReplicas":1,"updatingReplicas":1,"overSizedReplicas":0,"totalCapacity":{"storage":"3Gi"}}]}}`,
			"status"),
	}, {
		name: "status of a VolumeClaimUpdate not in effect",
		req:  withOtherClaimUpdate(),
		action: abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: abi.ObjectRef{Kind: abi.KindVolumeClaimUpdate, Namespace: "default", Name: "web-update-2", UID: "vcu-2"},
			ClaimUpdateStatus: &abi.VolumeClaimUpdateStatus{ObservedGeneration: 1}},
		want: mergePatch("VolumeClaimUpdate", "default", "web-update-2",
			`{"metadata":{"uid":"vcu-2","resourceVersion":"51"},"status":{"conditions":null,"heldPartition":null,"observedGeneration":1,"userPartition":null,"volumeClaimTemplates":null}}`,
			"status"),
	}, {
		name:    "volume deleted, without the secret the module names",
		req:     volumeRequest(),
		action:  abi.Action{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle, Secrets: secrets}},
		volumes: []call{{Op: "deleteVolume", Name: driver + "/" + handle}},
	}, {
		name:   "event recorded",
		req:    volumeRequest(),
		action: abi.Action{Type: abi.ActionEvent, Target: claimRef(0), Event: &abi.Event{Type: abi.EventNormal, Reason: "Reclaimed", Message: "m"}},
		want:   call{Op: "event", Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data-web-0", UID: "claim-0", Event: []string{"Normal", "Reclaimed", "m", "policy"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, v := &fakeCluster{}, &fakeVolumes{drivers: []string{driver}}
			rep, err := executor(c, v).Execute(context.Background(), everything(), tt.req, &abi.Result{Actions: []abi.Action{tt.action}})
			require.NoError(t, err)
			require.Equal(t, []actions.Outcome{actions.Executed}, outcomes(rep))
			require.NotEmpty(t, rep.Actions[0].Write)
			var want []call
			if tt.want.Op != "" {
				want = []call{tt.want}
			}
			require.Equal(t, want, c.calls)
			require.Equal(t, tt.volumes, v.calls)
		})
	}
}

func TestExecuteUnchanged(t *testing.T) {
	noRollingUpdate := setRequest()
	noRollingUpdate.StatefulSet.Set.Spec.UpdateStrategy.RollingUpdate = nil
	deleting := setRequest()
	deleting.StatefulSet.Claims[0].Metadata.DeletionTimestamp = "2024-06-01T12:00:00Z"
	// recorded's claim carries the host's record of the request it applied.
	recorded := setRequest()
	recorded.StatefulSet.Claims[0].Metadata.Annotations = map[string]string{abi.AnnotationAppliedStorage: "1Gi"}
	heldAt1 := setRequest()
	heldAt1.StatefulSet.Set.Metadata.Annotations = map[string]string{abi.AnnotationHeldPartition: "1", abi.AnnotationUserPartition: "0"}
	tests := []struct {
		name   string
		req    *abi.ReconcileRequest
		action abi.Action
	}{
		{"owner reference already there", setRequest(), abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(0), OwnerReferences: &abi.OwnerReferencesChange{Add: []abi.OwnerReference{setOwner}}}},
		{"owner reference already gone", setRequest(), abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(0), OwnerReferences: &abi.OwnerReferencesChange{Remove: []string{"pod-0"}}}},
		{"finalizer already there", setRequest(), abi.Action{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "kubernetes.io/pvc-protection"}},
		{"finalizer already gone", setRequest(), abi.Action{Type: abi.ActionRemoveFinalizer, Target: claimRef(1), Finalizer: "kubernetes.io/pvc-protection"}},
		{"object already being deleted", deleting, abi.Action{Type: abi.ActionDeleteObject, Target: claimRef(0)}},
		{"claim already as applied", recorded, abi.Action{Type: abi.ActionApplyClaim, Target: claimRef(0), Claim: &abi.ClaimApply{
			Labels: map[string]string{"app": "web"}, Resources: &abi.ResourceRequirements{Requests: map[string]string{"storage": "1024Mi"}}, VolumeAttributesClassName: new("gold"),
		}}},
		{"partition already set", setRequest(), abi.Action{Type: abi.ActionSetPartition, Target: setRef(), Partition: new(int32(1))}},
		{"partition 0 is the default", noRollingUpdate, abi.Action{Type: abi.ActionSetPartition, Target: setRef(), Partition: new(int32(0))}},
		{"hold already recorded", heldAt1, abi.Action{Type: abi.ActionSetPartition, Target: setRef(), Partition: new(int32(1)), Hold: &abi.PartitionHold{UserPartition: new(int32(0))}}},
		{"status already as written", setRequest(), abi.Action{Type: abi.ActionUpdateClaimUpdateStatus, Target: claimUpdateRef(), ClaimUpdateStatus: &abi.VolumeClaimUpdateStatus{
			ObservedGeneration:   2,
			VolumeClaimTemplates: []abi.VolumeClaimTemplateStatus{{TemplateName: "data", CompatibleReplicas: 2, TotalCapacity: map[string]string{"storage": "2048Mi"}}},
			Conditions:           []abi.Condition{{Type: "Ready", Status: "True", LastTransitionTime: "2024-06-01T14:00:00+02:00"}},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeCluster{}
			rep, err := executor(c, nil).Execute(context.Background(), everything(), tt.req, &abi.Result{Actions: []abi.Action{tt.action}})
			require.NoError(t, err)
			require.Equal(t, []actions.Outcome{actions.Unchanged}, outcomes(rep))
			require.Empty(t, c.calls)
		})
	}
}

func TestExecuteChainsResourceVersions(t *testing.T) {
	c, v := &fakeCluster{}, &fakeVolumes{drivers: []string{driver}}
	res := &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}},
		{Type: abi.ActionRemoveFinalizer, Target: volumeRef(), Finalizer: "external-provisioner.volume.kubernetes.io/finalizer"},
		{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "kubeplug.dev/x"},
		{Type: abi.ActionRemoveFinalizer, Target: volumeRef(), Finalizer: "kubernetes.io/pv-protection"},
		{Type: abi.ActionDeleteObject, Target: volumeRef()},
	}}
	rep, err := executor(c, v).Execute(context.Background(), everything(), volumeRequest(), res)
	require.NoError(t, err)
	require.Equal(t, map[actions.Outcome]int{actions.Executed: 5}, rep.Counts)
	require.Len(t, v.calls, 1)
	require.Equal(t, []call{
		// Both removals on the volume are one patch.
		mergePatch("PersistentVolume", "", "pv-1", `{"metadata":{"uid":"pv-uid","resourceVersion":"5","finalizers":null}}`),
		// Another object keeps its own resourceVersion.
		mergePatch("PersistentVolumeClaim", "default", "data-web-0", `{"metadata":{"uid":"claim-0","resourceVersion":"20","finalizers":["kubeplug.dev/x"]}}`),
		// The patch returned 101.
		{Op: "delete", Kind: "PersistentVolume", Name: "pv-1", UID: "pv-uid", RV: "101"},
	}, c.calls)
}

func TestExecuteStopsAfterDeleteOfTheSameObject(t *testing.T) {
	c := &fakeCluster{}
	res := &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionDeleteObject, Target: claimRef(1)},
		{Type: abi.ActionEvent, Target: claimRef(1), Event: &abi.Event{Type: abi.EventNormal, Reason: "Deleted"}},
		{Type: abi.ActionAddFinalizer, Target: claimRef(1), Finalizer: "kubeplug.dev/x"},
		{Type: abi.ActionEvent, Target: setRef(), Event: &abi.Event{Type: abi.EventNormal, Reason: "Never"}},
	}}
	rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), res)
	require.ErrorIs(t, err, actions.ErrConflict)
	require.ErrorContains(t, err, "action 2 (addFinalizer on PersistentVolumeClaim default/data-web-1)")
	require.ErrorContains(t, err, "was deleted by action 0")
	require.Equal(t, []actions.Outcome{actions.Executed, actions.Executed, actions.Conflict, actions.Skipped}, outcomes(rep))
	require.Equal(t, []string{"delete", "event"}, ops(c.calls))
}

func ops(calls []call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Op)
	}
	return out
}

func TestExecuteStopsAtFirstConflictOrFailure(t *testing.T) {
	boom := errors.New("connection reset")
	gr := schema.GroupResource{Resource: "persistentvolumeclaims"}
	tests := []struct {
		name     string
		err      error
		outcome  actions.Outcome
		conflict bool
	}{
		{"resourceVersion conflict", apierrors.NewConflict(gr, "data-web-0", errors.New("the object has been modified")), actions.Conflict, true},
		{"object gone", apierrors.NewNotFound(gr, "data-web-0"), actions.Conflict, true},
		{"forbidden", apierrors.NewForbidden(gr, "data-web-0", errors.New("no")), actions.Failed, false},
		{"transport", boom, actions.Failed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeCluster{fail: func(c call) error {
				if c.Op == "patch" {
					return tt.err
				}
				return nil
			}}
			res := &abi.Result{Actions: []abi.Action{
				{Type: abi.ActionEvent, Target: setRef(), Event: &abi.Event{Type: abi.EventNormal, Reason: "Start"}},
				{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "kubeplug.dev/x"},
				{Type: abi.ActionDeleteObject, Target: podRef()},
				{Type: abi.ActionEvent, Target: setRef(), Event: &abi.Event{Type: abi.EventNormal, Reason: "End"}},
			}}
			rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), res)
			require.Error(t, err)
			require.ErrorIs(t, err, tt.err)
			require.Equal(t, tt.conflict, errors.Is(err, actions.ErrConflict))
			require.ErrorContains(t, err, "module policy: action 1 (addFinalizer on PersistentVolumeClaim default/data-web-0)")
			require.Equal(t, []actions.Outcome{actions.Executed, tt.outcome, actions.Skipped, actions.Skipped}, outcomes(rep))
			require.Equal(t, map[actions.Outcome]int{actions.Executed: 1, tt.outcome: 1, actions.Skipped: 2}, rep.Counts)
			require.Equal(t, []string{"event", "patch"}, ops(c.calls))
		})
	}
}

func TestExecuteVolumeDeleteFailureStops(t *testing.T) {
	boom := errors.New("driver unavailable")
	c, v := &fakeCluster{}, &fakeVolumes{drivers: []string{driver}, err: boom}
	res := &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}},
		{Type: abi.ActionRemoveFinalizer, Target: volumeRef(), Finalizer: "external-provisioner.volume.kubernetes.io/finalizer"},
	}}
	rep, err := executor(c, v).Execute(context.Background(), everything(), volumeRequest(), res)
	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, actions.ErrConflict)
	require.Equal(t, []actions.Outcome{actions.Failed, actions.Skipped}, outcomes(rep))
	require.Empty(t, c.calls, "the finalizer stays while the volume may still exist")
}

func TestExecuteUnknownResourceVersionStops(t *testing.T) {
	c := &fakeCluster{noRV: true}
	res := &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "kubeplug.dev/x"},
		{Type: abi.ActionDeleteObject, Target: claimRef(0)},
	}}
	rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), res)
	require.ErrorIs(t, err, actions.ErrConflict)
	require.Equal(t, []actions.Outcome{actions.Executed, actions.Conflict}, outcomes(rep))
	require.Len(t, c.calls, 1)
}

func TestExecuteRefusalIsRecordedAndStopsTheRest(t *testing.T) {
	var logs bytes.Buffer
	c := &fakeCluster{}
	e := executor(c, &fakeVolumes{drivers: []string{"other.csi"}})
	e.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	// Were the finalizer removed after the refused deleteVolume, the PV
	// would go and its volume would leak.
	res := &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}},
		{Type: abi.ActionRemoveFinalizer, Target: volumeRef(), Finalizer: "external-provisioner.volume.kubernetes.io/finalizer"},
	}}
	rep, err := e.Execute(context.Background(), everything(), volumeRequest(), res)
	require.ErrorIs(t, err, actions.ErrRefused)
	require.Equal(t, []actions.Outcome{actions.Refused, actions.Skipped}, outcomes(rep))
	require.ErrorContains(t, rep.Actions[0].Err, `CSI driver "hostpath.csi.k8s.io" is not configured on this host`)

	require.Equal(t, []string{"event"}, ops(c.calls), "the refusal's event, and no write")
	ev := c.calls[0]
	require.Equal(t, "PersistentVolume", ev.Kind, "recorded on the subject")
	require.Equal(t, "pv-1", ev.Name)
	require.Equal(t, "pv-uid", ev.UID)
	require.Equal(t, "Warning", ev.Event[0])
	require.Equal(t, actions.ReasonActionRefused, ev.Event[1])
	require.Contains(t, ev.Event[2], "module policy, action 0")
	require.Equal(t, "policy", ev.Event[3])
	require.Contains(t, logs.String(), `msg="refused action; skipping the rest" module=policy key=pv-1 action=0 type=deleteVolume`)
}

func TestExecuteRefusesTargetsOutsideTheRequest(t *testing.T) {
	c := &fakeCluster{}
	res := &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionDeleteObject, Target: abi.ObjectRef{Kind: abi.KindPersistentVolume, Name: "pv-2", UID: "pv-2"}},
	}}
	rep, err := executor(c, nil).Execute(context.Background(), everything(), volumeRequest(), res)
	require.ErrorIs(t, err, actions.ErrRefused)
	require.Equal(t, []actions.Outcome{actions.Refused}, outcomes(rep))
	require.Equal(t, []string{"event"}, ops(c.calls))
	require.Contains(t, c.calls[0].Event[2], "not an object of the reconcile input")
}

func TestExecuteWithoutVolumeDeleterRefuses(t *testing.T) {
	c := &fakeCluster{}
	res := &abi.Result{Actions: []abi.Action{{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}}}}
	rep, err := executor(c, nil).Execute(context.Background(), everything(), volumeRequest(), res)
	require.ErrorIs(t, err, actions.ErrRefused)
	require.Equal(t, []actions.Outcome{actions.Refused}, outcomes(rep))
}

func TestExecuteShadowExecutesNothing(t *testing.T) {
	c, v := &fakeCluster{}, &fakeVolumes{drivers: []string{driver}}
	e := executor(c, v)
	e.Shadow = true
	res := &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}},
		{Type: abi.ActionRemoveFinalizer, Target: volumeRef(), Finalizer: "external-provisioner.volume.kubernetes.io/finalizer"},
		{Type: abi.ActionRemoveFinalizer, Target: volumeRef(), Finalizer: "kubernetes.io/pv-protection"},
		{Type: abi.ActionDeleteObject, Target: volumeRef()},
		{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "kubeplug.dev/x"},
		{Type: abi.ActionEvent, Target: volumeRef(), Event: &abi.Event{Type: abi.EventNormal, Reason: "Reclaimed"}},
		{Type: abi.ActionSetPartition, Target: volumeRef(), Partition: new(int32(0))},
		{Type: abi.ActionRemoveFinalizer, Target: claimRef(0), Finalizer: "not-there"},
	}}
	rep, err := e.Execute(context.Background(), everything(), volumeRequest(), res)
	require.NoError(t, err)
	require.Empty(t, c.calls, "no write and no event")
	require.Empty(t, v.calls)
	require.Equal(t, []actions.Outcome{
		actions.Shadow, actions.Shadow, actions.Shadow, actions.Shadow, actions.Shadow, actions.Shadow,
		actions.Refused, actions.Skipped,
	}, outcomes(rep))
	require.Equal(t, `merge patch {"metadata":{"uid":"pv-uid","resourceVersion":"5","finalizers":null}}`, rep.Actions[1].Write,
		"both removals planned as one write")
	require.Equal(t, "coalesced into the write of action 1", rep.Actions[2].Write)
	require.Equal(t, "delete with preconditions uid=pv-uid resourceVersion=5", rep.Actions[3].Write)

	// A shadow module asks again on every resync what it asked before: its
	// actions are debug lines, not a line a reconcile at the host's info.
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var logs bytes.Buffer
		e.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level}))
		_, err := e.Execute(context.Background(), everything(), volumeRequest(), res)
		require.NoError(t, err)
		require.Equal(t, level == slog.LevelDebug, strings.Contains(logs.String(), `level=DEBUG msg="shadow mode: action not executed" module=policy key=pv-1 action=0 type=deleteVolume`), logs.String())
	}
}

func TestExecuteNilResult(t *testing.T) {
	c := &fakeCluster{}
	rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), nil)
	require.NoError(t, err)
	require.Empty(t, rep.Actions)
	require.Empty(t, c.calls)
}

func TestExecuteApplyAfterApplyIsSent(t *testing.T) {
	c := &fakeCluster{}
	apply := abi.Action{Type: abi.ActionApplyClaim, Target: claimRef(0), Claim: &abi.ClaimApply{Labels: map[string]string{"tier": "gold"}}}
	same := abi.Action{Type: abi.ActionApplyClaim, Target: claimRef(0), Claim: &abi.ClaimApply{Labels: map[string]string{"app": "web"}}}
	rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), &abi.Result{Actions: []abi.Action{apply, same}})
	require.NoError(t, err)
	// The second apply matches the claim as the module saw it, but the
	// first apply changed what kubeplug owns, so only the server knows.
	require.Equal(t, []actions.Outcome{actions.Executed, actions.Executed}, outcomes(rep))
	require.Contains(t, c.calls[1].Data, `"resourceVersion":"101"`)
}

// kubeplug lowers a claim's storage request only when it set the request
// itself (the host's record says so) and only strictly above the claim's
// capacity, as kube-apiserver allows under RecoverVolumeExpansionFailure;
// within one Result an earlier apply's request counts as kubeplug's. Every
// apply with a request writes the record.
func TestExecuteApplyStorageRule(t *testing.T) {
	storage := func(q string) abi.Action {
		return abi.Action{Type: abi.ActionApplyClaim, Target: claimRef(0), Claim: &abi.ClaimApply{Resources: &abi.ResourceRequirements{Requests: map[string]string{"storage": q}}}}
	}
	// failed is the input with data-web-0 asking 10Gi, as kubeplug's apply
	// set it (record) or the user did (another record), on a 1Gi volume.
	failed := func(record string) *abi.ReconcileRequest {
		req := setRequest()
		c := &req.StatefulSet.Claims[0]
		c.Spec.Resources.Requests = map[string]string{"storage": "10Gi"}
		c.Status.Capacity = map[string]string{"storage": "1Gi"}
		if record != "" {
			c.Metadata.Annotations = map[string]string{abi.AnnotationAppliedStorage: record}
		}
		return req
	}
	t.Run("equal and higher are sent, with the record", func(t *testing.T) {
		c := &fakeCluster{}
		rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), &abi.Result{Actions: []abi.Action{storage("1024Mi"), storage("2Gi"), storage("2Gi")}})
		require.NoError(t, err)
		// The first writes the record the claim lacks, though its size is
		// the claim's already.
		require.Equal(t, []actions.Outcome{actions.Executed, actions.Executed, actions.Executed}, outcomes(rep))
		require.Contains(t, c.calls[0].Data, `"annotations":{"kubeplug.dev/applied-storage":"1Gi"}`)
		require.Contains(t, c.calls[1].Data, `"annotations":{"kubeplug.dev/applied-storage":"2Gi"}`)
	})
	t.Run("below a request set by hand or at creation", func(t *testing.T) {
		c := &fakeCluster{}
		rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), &abi.Result{Actions: []abi.Action{storage("512Mi"), storage("2Gi")}})
		require.ErrorIs(t, err, actions.ErrRefused)
		require.ErrorContains(t, err, "512Mi is lower than the claim's current request 1Gi, which kubeplug did not set")
		require.Equal(t, []actions.Outcome{actions.Refused, actions.Skipped}, outcomes(rep))
		require.Empty(t, c.writes())
	})
	t.Run("below a request the user changed after kubeplug's", func(t *testing.T) {
		c := &fakeCluster{}
		_, err := executor(c, nil).Execute(context.Background(), everything(), failed("5Gi"), &abi.Result{Actions: []abi.Action{storage("2Gi")}})
		require.ErrorIs(t, err, actions.ErrRefused)
		require.ErrorContains(t, err, "which kubeplug did not set")
		require.Empty(t, c.writes())
	})
	t.Run("kubeplug's failed expansion lowered above the capacity", func(t *testing.T) {
		c := &fakeCluster{}
		rep, err := executor(c, nil).Execute(context.Background(), everything(), failed("10240Mi"), &abi.Result{Actions: []abi.Action{storage("2Gi")}})
		require.NoError(t, err)
		require.Equal(t, []actions.Outcome{actions.Executed}, outcomes(rep))
		require.Contains(t, c.calls[0].Data, `"requests":{"storage":"2Gi"}`)
	})
	for _, q := range []string{"1Gi", "1023Mi"} {
		t.Run("kubeplug's request lowered to "+q+", at or below the capacity", func(t *testing.T) {
			c := &fakeCluster{}
			_, err := executor(c, nil).Execute(context.Background(), everything(), failed("10Gi"), &abi.Result{Actions: []abi.Action{storage(q)}})
			require.ErrorIs(t, err, actions.ErrRefused)
			require.ErrorContains(t, err, "to or below its status.capacity 1Gi")
			require.Empty(t, c.writes())
		})
	}
	t.Run("a module may not write the record", func(t *testing.T) {
		c := &fakeCluster{}
		a := storage("2Gi")
		a.Claim.Annotations = map[string]string{abi.AnnotationAppliedStorage: "100Gi"}
		_, err := executor(c, nil).Execute(context.Background(), everything(), failed("10Gi"), &abi.Result{Actions: []abi.Action{a}})
		require.ErrorIs(t, err, actions.ErrRefused)
		require.ErrorContains(t, err, "the host's record")
		require.Empty(t, c.writes())
	})
	t.Run("below an earlier apply's, on a claim without capacity", func(t *testing.T) {
		c := &fakeCluster{}
		rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), &abi.Result{Actions: []abi.Action{storage("4Gi"), storage("2Gi")}})
		require.ErrorIs(t, err, actions.ErrRefused)
		require.ErrorContains(t, err, "2Gi is lower than the claim's current request 4Gi and the claim has no status.capacity")
		require.ErrorContains(t, err, "an earlier action of this result changed it")
		require.Equal(t, []actions.Outcome{actions.Executed, actions.Refused}, outcomes(rep))
		require.Len(t, c.writes(), 1)
	})
	t.Run("in shadow mode", func(t *testing.T) {
		c := &fakeCluster{}
		e := executor(c, nil)
		e.Shadow = true
		rep, _ := e.Execute(context.Background(), everything(), setRequest(), &abi.Result{Actions: []abi.Action{storage("4Gi"), storage("3Gi")}})
		require.Equal(t, []actions.Outcome{actions.Shadow, actions.Refused}, outcomes(rep))
	})
}

// A CSI DeleteVolume takes no precondition, so the executor reads the
// volume object from the API server first and deletes nothing unless it is
// still the version the module saw.
func TestExecuteDeleteVolumeOnlyOnTheVersionSeen(t *testing.T) {
	tests := []struct {
		name    string
		current map[string]actions.Meta
	}{
		{"volume changed since the snapshot", map[string]actions.Meta{"pv-1": {UID: "pv-uid", ResourceVersion: "6"}}},
		{"volume replaced by another of the same name", map[string]actions.Meta{"pv-1": {UID: "other-uid", ResourceVersion: "5"}}},
		{"volume gone", map[string]actions.Meta{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, v := &fakeCluster{current: tt.current}, &fakeVolumes{drivers: []string{driver}}
			res := &abi.Result{Actions: []abi.Action{
				{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}},
				{Type: abi.ActionRemoveFinalizer, Target: volumeRef(), Finalizer: "external-provisioner.volume.kubernetes.io/finalizer"},
			}}
			rep, err := executor(c, v).Execute(context.Background(), everything(), volumeRequest(), res)
			require.ErrorIs(t, err, actions.ErrConflict)
			require.Equal(t, []actions.Outcome{actions.Conflict, actions.Skipped}, outcomes(rep))
			require.Empty(t, v.calls, "no DeleteVolume on a stale view")
			require.Empty(t, c.writes(), "no write after the conflict")
			require.Equal(t, 1, c.reads)
		})
	}
}

// After a successful DeleteVolume, a finalizer removal that conflicts with
// another controller's write is planned again on the object as it is now:
// keeping the finalizer would only make the next reconcile delete the
// volume a second time.
func TestExecuteFinishesVolumeDeletionAfterConflict(t *testing.T) {
	const ext = "external-provisioner.volume.kubernetes.io/finalizer"
	res := &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}},
		{Type: abi.ActionRemoveFinalizer, Target: volumeRef(), Finalizer: ext},
		{Type: abi.ActionDeleteObject, Target: volumeRef()},
	}}
	conflictOnce := func(c call) error {
		if c.Op == "patch" && strings.Contains(c.Data, `"resourceVersion":"5"`) {
			return apierrors.NewConflict(schema.GroupResource{Resource: "persistentvolumes"}, "pv-1", errors.New("changed"))
		}
		return nil
	}
	tests := []struct {
		name     string
		now      actions.Meta // the volume after the other controller's write
		gone     bool
		outcomes []actions.Outcome
		patch    string // the retried removal, "" when none
	}{{
		name:     "another finalizer removed meanwhile",
		now:      actions.Meta{UID: "pv-uid", ResourceVersion: "6", Finalizers: []string{ext}},
		outcomes: []actions.Outcome{actions.Executed, actions.Executed, actions.Executed},
		patch:    `{"metadata":{"uid":"pv-uid","resourceVersion":"6","finalizers":null}}`,
	}, {
		name:     "finalizer already removed by someone else",
		now:      actions.Meta{UID: "pv-uid", ResourceVersion: "6", Finalizers: []string{"kubernetes.io/pv-protection"}},
		outcomes: []actions.Outcome{actions.Executed, actions.Unchanged, actions.Executed},
	}, {
		name:     "replaced by another object of the same name",
		now:      actions.Meta{UID: "new-uid", ResourceVersion: "6", Finalizers: []string{ext}},
		outcomes: []actions.Outcome{actions.Executed, actions.Conflict, actions.Skipped},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, v := &fakeCluster{fail: conflictOnce}, &fakeVolumes{drivers: []string{driver}}
			req := volumeRequest()
			req.PersistentVolume.Volume.Metadata.Finalizers = []string{"kubernetes.io/pv-protection", ext}
			// The first read (before DeleteVolume) sees the module's
			// version; later ones see the other controller's write.
			c.current = map[string]actions.Meta{"pv-1": {UID: "pv-uid", ResourceVersion: "5"}}
			c.onRead = func() { c.current = map[string]actions.Meta{"pv-1": tt.now} }
			rep, _ := executor(c, v).Execute(context.Background(), everything(), req, res)
			require.Equal(t, tt.outcomes, outcomes(rep))
			require.Len(t, v.calls, 1, "one DeleteVolume")
			var retried string
			for _, w := range c.writes() {
				if w.Op == "patch" && !strings.Contains(w.Data, `"resourceVersion":"5"`) {
					retried = w.Data
				}
			}
			require.Equal(t, tt.patch, retried)
		})
	}
}

// An owner reference is added only to an owner that the API server has,
// with that UID, and that is not being deleted: the caches may lag, and a
// reference to a set deleted with propagationPolicy Orphan would have the
// garbage collector delete the claim it promised to keep.
func TestExecuteChecksNewOwners(t *testing.T) {
	add := func(claim int, refs ...abi.OwnerReference) abi.Action {
		return abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(claim),
			OwnerReferences: &abi.OwnerReferencesChange{Add: refs}}
	}
	tests := []struct {
		name    string
		current map[string]actions.Meta
		want    actions.Outcome
		reads   int
	}{
		{"owner live", map[string]actions.Meta{"web": {UID: "set-uid"}}, actions.Executed, 1},
		{"owner terminating", map[string]actions.Meta{"web": {UID: "set-uid", Deleting: true, Finalizers: []string{"foregroundDeletion"}}}, actions.Executed, 1},
		{"owner being deleted with orphan propagation", map[string]actions.Meta{"web": {UID: "set-uid", Deleting: true, Finalizers: []string{"orphan"}}}, actions.Refused, 1},
		{"owner gone", map[string]actions.Meta{}, actions.Conflict, 1},
		{"owner recreated with another uid", map[string]actions.Meta{"web": {UID: "new-uid"}}, actions.Conflict, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeCluster{current: tt.current}
			rep, _ := executor(c, nil).Execute(context.Background(), everything(), setRequest(), &abi.Result{Actions: []abi.Action{add(1, setOwner)}})
			require.Equal(t, []actions.Outcome{tt.want}, outcomes(rep))
			require.Equal(t, tt.reads, c.reads)
			if tt.want != actions.Executed {
				require.Empty(t, c.writes(), "no write")
			}
		})
	}
	t.Run("an owner already referenced is not read again", func(t *testing.T) {
		c := &fakeCluster{current: map[string]actions.Meta{}}
		upgraded := setOwner
		upgraded.BlockOwnerDeletion = false
		rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), &abi.Result{Actions: []abi.Action{add(0, upgraded)}})
		require.NoError(t, err)
		require.Equal(t, []actions.Outcome{actions.Executed}, outcomes(rep), "reference rewritten in place")
		require.Zero(t, c.reads)
	})
	// Upstream gives a condemned pod that is already terminating its claim
	// under whenScaled: Delete, so that the collector removes the claim
	// after the pod; refusing would leave the claim behind for good.
	t.Run("a terminating pod is given its claim", func(t *testing.T) {
		c := &fakeCluster{current: map[string]actions.Meta{"web-1": {UID: "pod-1", Deleting: true}}}
		req := setRequest()
		req.StatefulSet.Pods[1].Metadata.DeletionTimestamp = "2026-01-01T00:00:00Z"
		pod := abi.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web-1", UID: "pod-1", Controller: true, BlockOwnerDeletion: true}
		rep, err := executor(c, nil).Execute(context.Background(), everything(), req, &abi.Result{Actions: []abi.Action{add(1, pod)}})
		require.NoError(t, err)
		require.Equal(t, []actions.Outcome{actions.Executed}, outcomes(rep))
		require.Len(t, c.writes(), 1)
	})

}

// Removing a claim's reference to a pod undoes a scale-down's claim
// deletion: it is made only on the set the module saw. The executor reads
// the set, and a set whose spec moved on (another generation), that was
// replaced, or that is gone is a conflict: reconcile again on fresh state.
// A removal of another kind of reference, or an addition, reads nothing.
func TestExecuteChecksTheSetBeforeRemovingAPodReference(t *testing.T) {
	pod := abi.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web-1", UID: "pod-1", Controller: true, BlockOwnerDeletion: true}
	req := func() *abi.ReconcileRequest {
		r := setRequest()
		r.StatefulSet.Set.Metadata.Generation = 3
		r.StatefulSet.Claims[1].Metadata.OwnerReferences = []abi.OwnerReference{pod}
		return r
	}
	unpod := abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(1),
		OwnerReferences: &abi.OwnerReferencesChange{Remove: []string{"pod-1"}}}
	tests := []struct {
		name string
		set  *actions.Meta
		want actions.Outcome
	}{
		{"the set as the module saw it", &actions.Meta{UID: "set-uid", Generation: 3}, actions.Executed},
		{"the set scaled since", &actions.Meta{UID: "set-uid", Generation: 4}, actions.Conflict},
		{"the set replaced", &actions.Meta{UID: "new-uid", Generation: 3}, actions.Conflict},
		{"the set gone", nil, actions.Conflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := map[string]actions.Meta{"web-1": {UID: "pod-1"}}
			if tt.set != nil {
				cur["web"] = *tt.set
			}
			c := &fakeCluster{current: cur}
			rep, _ := executor(c, nil).Execute(context.Background(), everything(), req(), &abi.Result{Actions: []abi.Action{unpod}})
			require.Equal(t, []actions.Outcome{tt.want}, outcomes(rep))
			if tt.want != actions.Executed {
				require.Empty(t, c.writes(), "no write")
				require.ErrorContains(t, rep.Actions[0].Err, "not removing a pod's reference")
			}
		})
	}
	t.Run("removing a set reference reads no set", func(t *testing.T) {
		c := &fakeCluster{current: map[string]actions.Meta{}}
		r := setRequest()
		rep, err := executor(c, nil).Execute(context.Background(), everything(), r, &abi.Result{Actions: []abi.Action{{
			Type: abi.ActionUpdateOwnerReferences, Target: claimRef(0), OwnerReferences: &abi.OwnerReferencesChange{Remove: []string{"set-uid"}}}}})
		require.NoError(t, err)
		require.Equal(t, []actions.Outcome{actions.Executed}, outcomes(rep))
		require.Zero(t, c.reads)
	})
}
