package memcluster_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/memcluster"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

var (
	_ actions.Cluster       = (*memcluster.Cluster)(nil)
	_ actions.VolumeDeleter = (*memcluster.Cluster)(nil)
	_ snapshot.Lister       = (*memcluster.Cluster)(nil)
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newCluster(t *testing.T, objs ...map[string]any) *memcluster.Cluster {
	t.Helper()
	c := memcluster.New(memcluster.Config{Now: func() time.Time { return t0 }, Drivers: []string{"csi.example.com"}})
	require.NoError(t, c.Load(objs...))
	return c
}

func claim(name string, extra ...func(map[string]any)) map[string]any {
	obj := map[string]any{
		"apiVersion": "v1",
		"kind":       "PersistentVolumeClaim",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"accessModes": []any{"ReadWriteOnce"},
			"resources":   map[string]any{"requests": map[string]any{"storage": "1Gi"}},
		},
		"status": map[string]any{"phase": "Bound"},
	}
	for _, f := range extra {
		f(obj)
	}
	return obj
}

func withMeta(k string, v any) func(map[string]any) {
	return func(obj map[string]any) { obj["metadata"].(map[string]any)[k] = v }
}

func meta(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	m, ok := obj["metadata"].(map[string]any)
	require.True(t, ok, "object has no metadata: %v", obj)
	return m
}

func TestLoadFillsServerFields(t *testing.T) {
	c := newCluster(t,
		claim("a"),
		claim("b", withMeta("uid", "given"), withMeta("creationTimestamp", "2020-05-05T00:00:00Z"), withMeta("resourceVersion", "999")),
	)

	a, ok := c.Get("PersistentVolumeClaim", "default", "a")
	require.True(t, ok)
	am := meta(t, a)
	require.Equal(t, "default", am["namespace"], "namespaced objects default to the default namespace")
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, am["uid"])
	require.Equal(t, "2026-01-01T00:00:00Z", am["creationTimestamp"])
	require.Equal(t, int64(1), am["generation"])

	b, _ := c.Get("PersistentVolumeClaim", "default", "b")
	bm := meta(t, b)
	require.Equal(t, "given", bm["uid"])
	require.Equal(t, "2020-05-05T00:00:00Z", bm["creationTimestamp"])
	rvA, err := strconv.Atoi(am["resourceVersion"].(string))
	require.NoError(t, err)
	rvB, err := strconv.Atoi(bm["resourceVersion"].(string))
	require.NoError(t, err)
	require.Greater(t, rvB, rvA, "a loaded resourceVersion is replaced by the global counter")
	require.Equal(t, 2, c.WriteCount())

	// Identities are stable across clusters so case files give the same
	// uids on every run.
	again := newCluster(t, claim("a"))
	a2, _ := again.Get("PersistentVolumeClaim", "default", "a")
	require.Equal(t, am["uid"], meta(t, a2)["uid"])
}

func TestLoadCanonicalises(t *testing.T) {
	c := newCluster(t, claim("a", func(o map[string]any) {
		o["spec"].(map[string]any)["resources"] = map[string]any{"requests": map[string]any{"storage": "1024Mi"}}
		o["spec"].(map[string]any)["notAField"] = true
	}))
	a, _ := c.Get("PersistentVolumeClaim", "default", "a")
	spec := a["spec"].(map[string]any)
	require.Equal(t, "1Gi", spec["resources"].(map[string]any)["requests"].(map[string]any)["storage"])
	require.NotContains(t, spec, "notAField")
}

func TestLoadRejects(t *testing.T) {
	tests := []struct {
		name string
		objs []map[string]any
		want string
	}{
		{"no kind", []map[string]any{{"apiVersion": "v1", "metadata": map[string]any{"name": "x"}}}, "apiVersion and kind are required"},
		{"no name", []map[string]any{{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{}}}, "has no metadata.name"},
		{"wrong apiVersion", []map[string]any{{"apiVersion": "apps/v1beta1", "kind": "StatefulSet", "metadata": map[string]any{"name": "x"}}}, `want "apps/v1"`},
		{"namespaced PV", []map[string]any{{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "x", "namespace": "a"}}}, "cluster-scoped"},
		{"deleting without finalizers", []map[string]any{claim("x", withMeta("deletionTimestamp", "2025-01-01T00:00:00Z"))}, "no finalizers"},
		{"wrong field type", []map[string]any{{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"name": "x"}, "spec": map[string]any{"replicas": "three"}}}, "does not fit the StatefulSet schema"},
		{"duplicate", []map[string]any{claim("x"), claim("y"), claim("x")}, "already exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := memcluster.New(memcluster.Config{})
			err := c.Load(tt.objs...)
			require.ErrorContains(t, err, tt.want)
			require.Empty(t, c.List("PersistentVolumeClaim"), "a failed Load creates nothing")
			require.Zero(t, c.WriteCount())
		})
	}

	t.Run("already stored", func(t *testing.T) {
		c := newCluster(t, claim("x"))
		err := c.Load(claim("y"), claim("x"))
		require.True(t, apierrors.IsAlreadyExists(err), "got %v", err)
		_, ok := c.Get("PersistentVolumeClaim", "default", "y")
		require.False(t, ok)
	})
}

func TestGetReturnsCopies(t *testing.T) {
	c := newCluster(t, claim("a"))
	a, _ := c.Get("PersistentVolumeClaim", "default", "a")
	meta(t, a)["name"] = "changed"
	a["spec"].(map[string]any)["accessModes"].([]any)[0] = "changed"
	for _, obj := range c.List("PersistentVolumeClaim") {
		require.Equal(t, "a", meta(t, obj)["name"])
		require.Equal(t, "ReadWriteOnce", obj["spec"].(map[string]any)["accessModes"].([]any)[0])
	}
}

func TestListAndKeysAreSorted(t *testing.T) {
	c := newCluster(t, claim("b"), claim("a", withMeta("namespace", "z")), claim("a"))
	require.Equal(t, []memcluster.Key{
		{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "a"},
		{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "b"},
		{Kind: "PersistentVolumeClaim", Namespace: "z", Name: "a"},
	}, c.Keys("PersistentVolumeClaim"))
	require.Len(t, c.List("PersistentVolumeClaim"), 3)
	require.Equal(t, "PersistentVolumeClaim z/a", c.Keys("PersistentVolumeClaim")[2].String())
	require.Equal(t, "PersistentVolume pv", memcluster.Key{Kind: "PersistentVolume", Name: "pv"}.String())
}

func TestCheck(t *testing.T) {
	obj := claim("x", func(o map[string]any) { o["spec"].(map[string]any)["accessModes"] = "ReadWriteOnce" })
	err := memcluster.Check(obj)
	require.ErrorIs(t, err, memcluster.ErrInvalidObject)
	require.ErrorContains(t, err, "PersistentVolumeClaim default/x does not fit the PersistentVolumeClaim schema")
	good := claim("x")
	require.NoError(t, memcluster.Check(good))
	require.NotContains(t, good["metadata"], "namespace", "Check leaves its argument alone")
}
