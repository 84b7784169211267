package actions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

// 9,000 addFinalizer actions on one claim are one patch carrying the whole
// list, with the preconditions the module's view gives, and each action
// keeps its outcome.
func TestExecuteCoalescesFinalizersIntoOnePatch(t *testing.T) {
	const n = 9000
	res := &abi.Result{}
	for i := range n {
		res.Actions = append(res.Actions, abi.Action{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: fmt.Sprintf("example.com/f-%d", i)})
	}
	c := &fakeCluster{}
	rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), res)
	require.NoError(t, err)
	require.Len(t, c.calls, 1, "one patch")
	require.Equal(t, map[actions.Outcome]int{actions.Executed: n}, rep.Counts)
	require.Equal(t, "coalesced into the write of action 0", rep.Actions[n-1].Write)

	var patch struct {
		Metadata struct {
			UID             string   `json:"uid"`
			ResourceVersion string   `json:"resourceVersion"`
			Finalizers      []string `json:"finalizers"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.calls[0].Data), &patch))
	require.Equal(t, "claim-0", patch.Metadata.UID)
	require.Equal(t, "20", patch.Metadata.ResourceVersion)
	require.Len(t, patch.Metadata.Finalizers, n+1)
	require.Equal(t, "kubernetes.io/pvc-protection", patch.Metadata.Finalizers[0])
	require.Equal(t, fmt.Sprintf("example.com/f-%d", n-1), patch.Metadata.Finalizers[n])
}

// Owner reference and finalizer changes on one object, interleaved with
// changes to another and with events, are one patch per object, made in
// the order of each object's first action; the events are recorded in
// their places.
func TestExecuteCoalescesPerObject(t *testing.T) {
	pod1 := abi.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web-1", UID: "pod-1", Controller: true, BlockOwnerDeletion: true}
	res := &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(0), OwnerReferences: &abi.OwnerReferencesChange{Remove: []string{"set-uid"}}},
		{Type: abi.ActionEvent, Target: setRef(), Event: &abi.Event{Type: abi.EventNormal, Reason: "First"}},
		{Type: abi.ActionAddFinalizer, Target: claimRef(1), Finalizer: "kubeplug.dev/a"},
		{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(0), OwnerReferences: &abi.OwnerReferencesChange{Add: []abi.OwnerReference{pod1}}},
		{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "kubeplug.dev/b"},
		{Type: abi.ActionAddFinalizer, Target: claimRef(1), Finalizer: "kubeplug.dev/a"}, // already queued
		{Type: abi.ActionEvent, Target: setRef(), Event: &abi.Event{Type: abi.EventNormal, Reason: "Last"}},
	}}
	c := &fakeCluster{}
	rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), res)
	require.NoError(t, err)
	require.Equal(t, []actions.Outcome{
		actions.Executed, actions.Executed, actions.Executed, actions.Executed, actions.Executed, actions.Unchanged, actions.Executed,
	}, outcomes(rep))
	require.Equal(t, []string{"patch", "event", "patch", "event"}, ops(c.calls))
	require.Equal(t, mergePatch("PersistentVolumeClaim", "default", "data-web-0",
		`{"metadata":{"uid":"claim-0","resourceVersion":"20","ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"web-1","uid":"pod-1","controller":true,"blockOwnerDeletion":true}],"finalizers":["kubernetes.io/pvc-protection","kubeplug.dev/b"]}}`),
		c.calls[0])
	require.Equal(t, mergePatch("PersistentVolumeClaim", "default", "data-web-1", `{"metadata":{"uid":"claim-1","resourceVersion":"21","finalizers":["kubeplug.dev/a"]}}`), c.calls[2])
	require.Equal(t, 1, c.reads, "the new owner read once")
}

func TestExecuteCoalescedActionsThatUndoEachOtherWriteNothing(t *testing.T) {
	res := &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionAddFinalizer, Target: claimRef(1), Finalizer: "kubeplug.dev/a"},
		{Type: abi.ActionRemoveFinalizer, Target: claimRef(1), Finalizer: "kubeplug.dev/a"},
	}}
	c := &fakeCluster{}
	rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), res)
	require.NoError(t, err)
	require.Equal(t, []actions.Outcome{actions.Unchanged, actions.Unchanged}, outcomes(rep))
	require.Empty(t, c.calls)
}

// A refusal part way through a batch ends it where it stands: what was
// queued before it is written, as it would have been one by one, and
// nothing after it.
func TestExecuteRefusalInABatch(t *testing.T) {
	res := &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "kubeplug.dev/a"},
		{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "not a finalizer"},
		{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "kubeplug.dev/b"},
	}}
	c := &fakeCluster{}
	rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), res)
	require.ErrorIs(t, err, actions.ErrRefused)
	require.Equal(t, []actions.Outcome{actions.Executed, actions.Refused, actions.Skipped}, outcomes(rep))
	require.Equal(t, []call{
		mergePatch("PersistentVolumeClaim", "default", "data-web-0", `{"metadata":{"uid":"claim-0","resourceVersion":"20","finalizers":["kubernetes.io/pvc-protection","kubeplug.dev/a"]}}`),
	}, c.writes())
}

// The one write's conflict is every coalesced action's, and nothing after
// it is sent.
func TestExecuteConflictOfACoalescedWrite(t *testing.T) {
	res := &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "kubeplug.dev/a"},
		{Type: abi.ActionAddFinalizer, Target: claimRef(1), Finalizer: "kubeplug.dev/a"},
		{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "kubeplug.dev/b"},
	}}
	c := &fakeCluster{fail: func(c call) error {
		if c.Name == "data-web-0" {
			return apierrors.NewConflict(schema.GroupResource{Resource: "persistentvolumeclaims"}, c.Name, errors.New("changed"))
		}
		return nil
	}}
	rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), res)
	require.ErrorIs(t, err, actions.ErrConflict)
	require.ErrorContains(t, err, "action 0 (addFinalizer on PersistentVolumeClaim default/data-web-0)")
	require.Equal(t, []actions.Outcome{actions.Conflict, actions.Skipped, actions.Conflict}, outcomes(rep))
	require.Len(t, c.calls, 1)
}

// At most one controller, on the list the earlier actions leave: removing
// the set's controller reference and then adding the pod's is fine, adding
// the pod's while the set's stays is refused.
func TestExecuteOneController(t *testing.T) {
	pod0 := abi.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "pod-0", Controller: true}
	add := abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(0), OwnerReferences: &abi.OwnerReferencesChange{Add: []abi.OwnerReference{pod0}}}
	remove := abi.Action{Type: abi.ActionUpdateOwnerReferences, Target: claimRef(0), OwnerReferences: &abi.OwnerReferencesChange{Remove: []string{"set-uid"}}}

	c := &fakeCluster{}
	rep, err := executor(c, nil).Execute(context.Background(), everything(), setRequest(), &abi.Result{Actions: []abi.Action{add}})
	require.ErrorIs(t, err, actions.ErrRefused)
	require.ErrorContains(t, err, "more than one controller")
	require.Equal(t, []actions.Outcome{actions.Refused}, outcomes(rep))
	require.Empty(t, c.writes())

	c = &fakeCluster{}
	rep, err = executor(c, nil).Execute(context.Background(), everything(), setRequest(), &abi.Result{Actions: []abi.Action{remove, add}})
	require.NoError(t, err)
	require.Equal(t, []actions.Outcome{actions.Executed, actions.Executed}, outcomes(rep))
	require.Len(t, c.writes(), 1)
}
