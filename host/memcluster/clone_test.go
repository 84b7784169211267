package memcluster_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/host/memcluster"
)

// A clone keeps the state it was taken at, and writes to either side do not
// reach the other: resourceVersions go on from the same counter on both.
func TestCloneIsIndependent(t *testing.T) {
	ctx := context.Background()
	c := memcluster.New(memcluster.Config{})
	require.NoError(t, c.Load(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}}))
	old := c.Clone()
	_, err := c.Patch(ctx, "Pod", "default", "p", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), "test")
	require.NoError(t, err)
	got, _ := old.Get("Pod", "default", "p")
	require.Nil(t, got["metadata"].(map[string]any)["labels"], "the clone saw a write made after it")
	rv, err := old.Patch(ctx, "Pod", "default", "p", types.MergePatchType, []byte(`{"metadata":{"labels":{"c":"d"}}}`), "test")
	require.NoError(t, err)
	now, _ := c.Get("Pod", "default", "p")
	require.Equal(t, rv, now["metadata"].(map[string]any)["resourceVersion"], "both go on from the same counter")
	require.Equal(t, map[string]any{"a": "b"}, now["metadata"].(map[string]any)["labels"])
}
