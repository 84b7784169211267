package memcluster_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/memcluster"
)

func TestRecordEvent(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	set := abi.ObjectRef{Kind: "StatefulSet", Namespace: "default", Name: "web", UID: "u"}

	require.NoError(t, c.RecordEvent(ctx, set, "Warning", "Conflict", "m", "retention"))
	require.NoError(t, c.RecordEvent(ctx, set, "Warning", "Conflict", "m", "retention"))
	require.NoError(t, c.RecordEvent(ctx, set, "Warning", "Conflict", "other message", "retention"))
	require.NoError(t, c.RecordEvent(ctx, set, "Warning", "Conflict", "m", "reclaim"))

	evs := c.Events()
	require.Len(t, evs, 3, "identical events are aggregated")
	require.Equal(t, memcluster.Event{
		InvolvedObject: set, Type: "Warning", Reason: "Conflict", Message: "m",
		Source: "kubeplug/retention", Count: 2, FirstTimestamp: t0, LastTimestamp: t0,
	}, evs[0])
	require.Equal(t, "other message", evs[1].Message)
	require.Equal(t, "kubeplug/reclaim", evs[2].Source)
	require.Equal(t, 1, evs[2].Count)

	err := c.RecordEvent(ctx, set, "Error", "Conflict", "m", "retention")
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
	require.Len(t, c.Events(), 3)
	require.Zero(t, c.WriteCount(), "events are not object writes")
}

func TestVolumeDeleter(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	require.True(t, c.Configured("csi.example.com"))
	require.False(t, c.Configured("other.example.com"))

	secrets := &abi.SecretReference{Namespace: "kube-system", Name: "s"}
	require.NoError(t, c.DeleteVolume(ctx, "csi.example.com", "vol-2", secrets))
	require.NoError(t, c.DeleteVolume(ctx, "csi.example.com", "vol-1", nil))
	require.NoError(t, c.DeleteVolume(ctx, "csi.example.com", "vol-2", nil), "deleting a deleted volume succeeds")
	require.ErrorIs(t, c.DeleteVolume(ctx, "other.example.com", "vol-3", nil), memcluster.ErrDriverNotConfigured)

	secrets.Name = "changed after the call"
	require.Equal(t, []memcluster.VolumeDelete{
		{Driver: "csi.example.com", VolumeHandle: "vol-2", Secrets: &abi.SecretReference{Namespace: "kube-system", Name: "s"}},
		{Driver: "csi.example.com", VolumeHandle: "vol-1"},
	}, c.VolumeDeletes())
}
