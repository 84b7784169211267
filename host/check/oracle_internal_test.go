package check

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/memcluster"
)

// A PersistentVolume of reclaim policy Delete gone while its volume was
// never deleted is a leak, reported when the unperturbed run has none; one
// whose volume was deleted, or of policy Retain, is not.
func TestLeakOracle(t *testing.T) {
	pv := func(name, handle, policy string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"persistentVolumeReclaimPolicy": policy, "csi": map[string]any{"driver": "d", "volumeHandle": handle}}}
	}
	c := memcluster.New(memcluster.Config{Drivers: []string{"d"}})
	require.NoError(t, c.Load(pv("leaked", "h1", "Delete"), pv("deleted", "h2", "Delete"), pv("retained", "h3", "Retain")))
	x := &execution{sess: &casetest.Session{Cluster: c}, res: &result{leaks: map[string]string{}, alive: map[string]string{},
		deleted: map[string]string{}, volumes: map[string]string{}, shrinks: map[string]lowering{}}}
	x.res.versions = []*memcluster.Cluster{c.Clone()}
	ctx := context.Background()
	require.NoError(t, c.DeleteVolume(ctx, "d", "h2", nil))
	for _, n := range []string{"leaked", "deleted", "retained"} {
		require.NoError(t, c.Delete(ctx, "PersistentVolume", "", n, "", ""))
	}
	x.finish()
	require.Equal(t, map[string]string{"d/h1": "PersistentVolume leaked"}, x.res.leaks)

	r := &runner{base: &result{leaks: map[string]string{}, end: x.res.end}}
	vs := r.compare(x.res)
	require.Len(t, vs, 1)
	require.Equal(t, OracleLeak, vs[0].Oracle)
	require.Equal(t, "PersistentVolume leaked is gone and its backing volume d/h1 was never deleted", vs[0].Detail)

	r.base.leaks = x.res.leaks // the unperturbed run leaks it too: not the perturbation's doing
	require.Empty(t, r.compare(x.res))
}

// Every write that lowers a claim's request is recorded, above the
// capacity too (that cancels an expansion in flight); a raise is not. The
// oracle reports a lowering the unperturbed run does not make.
func TestShrinkOracle(t *testing.T) {
	claim := func(req, capacity string) map[string]any {
		return map[string]any{"kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": "c", "namespace": "default"},
			"spec":   map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": req}}},
			"status": map[string]any{"capacity": map[string]any{"storage": capacity}}}
	}
	x := &execution{res: &result{shrinks: map[string]lowering{}}}
	x.checkShrink(claim("1Gi", "1Gi"), claim("2Gi", "1Gi"), "raise")
	require.Empty(t, x.res.shrinks)
	x.checkShrink(claim("3Gi", "1Gi"), claim("2Gi", "1Gi"), "module: patch PersistentVolumeClaim default/c")
	require.Len(t, x.res.shrinks, 1)

	r := &runner{base: &result{shrinks: map[string]lowering{}}}
	vs := r.compare(x.res)
	require.Len(t, vs, 1)
	require.Equal(t, OracleShrink, vs[0].Oracle)
	require.Equal(t, "PersistentVolumeClaim default/c", vs[0].Object)
	require.Equal(t, "PersistentVolumeClaim default/c: request lowered from 3Gi to 2Gi (capacity 1Gi: the expansion to 3Gi in flight is cancelled); "+
		"the unperturbed run never lowers it so", vs[0].Detail)
	require.Equal(t, "module: patch PersistentVolumeClaim default/c", vs[0].Action)

	r.base.shrinks = x.res.shrinks // the unperturbed run lowers it the same way: a recovery it asks for
	require.Empty(t, r.compare(x.res))
}

// Finalizers are a set: the same ones in another order are the same end
// state; another finalizer, or one missing, is not.
func TestFinalizersCompareAsASet(t *testing.T) {
	claim := func(finalizers ...any) map[string]map[string]any {
		return map[string]map[string]any{"PersistentVolumeClaim default/c": {"kind": "PersistentVolumeClaim",
			"metadata": map[string]any{"name": "c", "namespace": "default", "finalizers": finalizers}}}
	}
	want := claim("kubernetes.io/pvc-protection", "kubeplug.dev/retain")
	require.Empty(t, diffStates(want, claim("kubeplug.dev/retain", "kubernetes.io/pvc-protection")))
	require.Equal(t, `PersistentVolumeClaim default/c: metadata.finalizers is ["kubernetes.io/pvc-protection"]; the unperturbed run ends with ["kubeplug.dev/retain","kubernetes.io/pvc-protection"]`,
		diffStates(want, claim("kubernetes.io/pvc-protection")))
	require.NotEmpty(t, diffStates(want, claim("kubeplug.dev/retain", "kubernetes.io/pvc-protection", "other")))
	// Another list in the same place keeps its order.
	lists := map[string]map[string]any{"X a": {"spec": map[string]any{"order": []any{"a", "b"}}}}
	require.NotEmpty(t, diffStates(lists, map[string]map[string]any{"X a": {"spec": map[string]any{"order": []any{"b", "a"}}}}))
}
