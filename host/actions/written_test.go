package actions_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

// TestReportWritten: a Result's report names each object its patches and
// deletes changed, once, with the resourceVersion the input gave it; events
// write no object, and shadow mode writes nothing.
func TestReportWritten(t *testing.T) {
	two := int32(2)
	res := &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "kubeplug.dev/a"},
		{Type: abi.ActionAddFinalizer, Target: claimRef(0), Finalizer: "kubeplug.dev/b"},
		{Type: abi.ActionSetPartition, Target: setRef(), Partition: &two},
		{Type: abi.ActionEvent, Target: podRef(), Event: &abi.Event{Type: abi.EventNormal, Reason: "R", Message: "m"}},
		{Type: abi.ActionDeleteObject, Target: podRef()},
	}}
	req := setRequest()
	rep, err := executor(&fakeCluster{}, nil).Execute(context.Background(), everything(), req, res)
	require.NoError(t, err)
	require.Equal(t, map[abi.ObjectRef]string{
		claimRef(0): req.StatefulSet.Claims[0].Metadata.ResourceVersion,
		setRef():    req.StatefulSet.Set.Metadata.ResourceVersion,
		podRef():    req.StatefulSet.Pods[0].Metadata.ResourceVersion,
	}, rep.Written)

	events := &abi.Result{Actions: res.Actions[3:4]}
	rep, err = executor(&fakeCluster{}, nil).Execute(context.Background(), everything(), setRequest(), events)
	require.NoError(t, err)
	require.Nil(t, rep.Written, "an event writes no object of the input")

	shadow := &actions.Executor{Cluster: &fakeCluster{}, Module: "policy", Shadow: true}
	rep, err = shadow.Execute(context.Background(), everything(), setRequest(), res)
	require.NoError(t, err)
	require.Nil(t, rep.Written, "shadow mode writes nothing")
}
