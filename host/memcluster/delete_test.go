package memcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/host/memcluster"
)

func TestDelete(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, claim("a", withMeta("uid", "uid-a")))
	obj, _ := c.Get("PersistentVolumeClaim", "default", "a")
	writes := c.WriteCount()

	tests := []struct {
		name     string
		obj      string
		uid, rv  string
		is       func(error) bool
		errorMsg string
	}{
		{name: "other uid", obj: "a", uid: "uid-b", is: apierrors.IsConflict, errorMsg: "UID in precondition: uid-b"},
		{name: "stale resourceVersion", obj: "a", rv: "999", is: apierrors.IsConflict, errorMsg: "has been modified"},
		{name: "missing", obj: "b", is: apierrors.IsNotFound, errorMsg: "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Delete(ctx, "PersistentVolumeClaim", "default", tt.obj, tt.uid, tt.rv)
			require.True(t, tt.is(err), "unexpected error kind: %v", err)
			require.ErrorContains(t, err, tt.errorMsg)
			require.Equal(t, writes, c.WriteCount())
		})
	}

	require.NoError(t, c.Delete(ctx, "PersistentVolumeClaim", "default", "a", "uid-a", rv(t, obj)))
	_, ok := c.Get("PersistentVolumeClaim", "default", "a")
	require.False(t, ok)
	require.Equal(t, writes+1, c.WriteCount())
	require.Equal(t, 4, c.RequestCount())
}

func TestDeleteWithFinalizers(t *testing.T) {
	ctx := context.Background()
	now := t0
	c := memcluster.New(memcluster.Config{Now: func() time.Time { return now }})
	require.NoError(t, c.Load(claim("a", withMeta("finalizers", []any{"kubernetes.io/pvc-protection", "example.com/x"}))))

	now = t0.Add(time.Hour)
	require.NoError(t, c.Delete(ctx, "PersistentVolumeClaim", "default", "a", "", ""))
	obj, ok := c.Get("PersistentVolumeClaim", "default", "a")
	require.True(t, ok, "an object with finalizers stays until they are gone")
	m := meta(t, obj)
	require.Equal(t, "2026-01-01T01:00:00Z", m["deletionTimestamp"])
	require.Equal(t, int64(0), m["deletionGracePeriodSeconds"])
	require.Equal(t, int64(2), m["generation"])
	marked := rv(t, obj)

	t.Run("deleting again changes nothing", func(t *testing.T) {
		now = t0.Add(2 * time.Hour)
		writes := c.WriteCount()
		require.NoError(t, c.Delete(ctx, "PersistentVolumeClaim", "default", "a", "", ""))
		obj, _ := c.Get("PersistentVolumeClaim", "default", "a")
		require.Equal(t, "2026-01-01T01:00:00Z", meta(t, obj)["deletionTimestamp"])
		require.Equal(t, marked, rv(t, obj))
		require.Equal(t, writes, c.WriteCount())
	})

	t.Run("no new finalizers", func(t *testing.T) {
		_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":["kubernetes.io/pvc-protection","example.com/x","example.com/new"]}}`), "")
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		require.ErrorContains(t, err, `no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/new"}`)
	})

	t.Run("removing one finalizer keeps the object", func(t *testing.T) {
		_, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":["example.com/x"]}}`), "")
		require.NoError(t, err)
		obj, ok := c.Get("PersistentVolumeClaim", "default", "a")
		require.True(t, ok)
		require.Equal(t, []any{"example.com/x"}, meta(t, obj)["finalizers"])
	})

	t.Run("removing the last finalizer removes the object", func(t *testing.T) {
		writes := c.WriteCount()
		got, err := c.Patch(ctx, "PersistentVolumeClaim", "default", "a", types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), "")
		require.NoError(t, err)
		require.NotEmpty(t, got)
		_, ok := c.Get("PersistentVolumeClaim", "default", "a")
		require.False(t, ok)
		require.Equal(t, writes+1, c.WriteCount())
	})
}

func TestNoGarbageCollector(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t,
		map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"name": "web", "uid": "set"}},
		claim("data-web-0", withMeta("ownerReferences", []any{map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "set"}})),
	)
	require.NoError(t, c.Delete(ctx, "StatefulSet", "default", "web", "", ""))
	_, ok := c.Get("PersistentVolumeClaim", "default", "data-web-0")
	require.True(t, ok, "owned objects are not collected")
}
