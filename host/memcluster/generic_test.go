package memcluster_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/host/memcluster"
)

const budget = `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"generateName":"web-"},"spec":{"minAvailable":1}}`

func conflictManagers(t *testing.T, err error) []string {
	t.Helper()
	require.True(t, apierrors.IsConflict(err), "want a conflict, got %v", err)
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	var out []string
	for _, c := range status.Status().Details.Causes {
		require.Equal(t, metav1.CauseTypeFieldManagerConflict, c.Type)
		out = append(out, c.Message+" "+c.Field)
	}
	return out
}

// TestCreateThenApply holds memcluster to what kube-apiserver 1.37 was
// measured to do (RATIONALE.md): a create is its manager's Update entry,
// which the same manager's unforced apply conflicts with; forced, the
// fields become the Apply entry's, and later applies change them freely.
func TestCreateThenApply(t *testing.T) {
	ctx := context.Background()
	c := memcluster.New(memcluster.Config{})
	name, rv, err := c.Create(ctx, "PodDisruptionBudget", "a", []byte(budget), "kubeplug/pdb")
	require.NoError(t, err)
	require.Equal(t, "web-bbbbc", name, "a generated name, the same on every run")
	obj, ok := c.Get("PodDisruptionBudget", "a", name)
	require.True(t, ok)
	require.Equal(t, rv, obj["metadata"].(map[string]any)["resourceVersion"])
	require.NotEmpty(t, obj["metadata"].(map[string]any)["uid"])

	_, _, err = c.Create(ctx, "PodDisruptionBudget", "a", []byte(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"`+name+`"}}`), "m")
	require.True(t, apierrors.IsAlreadyExists(err), "%v", err)

	apply := func(min int, force bool) error {
		_, err := c.Apply(ctx, "PodDisruptionBudget", "a", name, []byte(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{"minAvailable":`+string(rune('0'+min))+`}}`), "kubeplug/pdb", force, "")
		return err
	}
	require.Equal(t, []string{`conflict with "kubeplug/pdb" .spec.minAvailable`}, conflictManagers(t, apply(2, false)))
	require.NoError(t, apply(1, false), "the value it has: no conflict, the field shared")
	require.NoError(t, apply(2, true))
	require.NoError(t, apply(3, false), "the Apply entry owns it now")
	obj, _ = c.Get("PodDisruptionBudget", "a", name)
	require.EqualValues(t, 3, obj["spec"].(map[string]any)["minAvailable"])
}

// TestApplyConflicts: an unforced apply does not take a field another
// apply manager owns, nor one written before any apply (a case file's),
// nor one it shares; a value it does not change is no conflict.
func TestApplyConflicts(t *testing.T) {
	ctx := context.Background()
	c := memcluster.New(memcluster.Config{})
	require.NoError(t, c.Load(map[string]any{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
		"metadata": map[string]any{"name": "web", "namespace": "a"}, "spec": map[string]any{"minAvailable": int64(1), "maxUnavailable": nil}}))
	body := func(field string, v int) []byte {
		return []byte(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{"` + field + `":` + string(rune('0'+v)) + `}}`)
	}
	_, err := c.Apply(ctx, "PodDisruptionBudget", "a", "web", body("minAvailable", 2), "m", false, "")
	require.Equal(t, []string{"conflict with the object's earlier writer .spec.minAvailable"}, conflictManagers(t, err))
	_, err = c.Apply(ctx, "PodDisruptionBudget", "a", "web", body("minAvailable", 1), "m", false, "")
	require.NoError(t, err, "the same value is shared")
	_, err = c.Apply(ctx, "PodDisruptionBudget", "a", "web", body("minAvailable", 2), "m", false, "")
	require.Equal(t, []string{"conflict with the object's earlier writer .spec.minAvailable"}, conflictManagers(t, err), "a shared field changes by force only")

	_, err = c.Apply(ctx, "PodDisruptionBudget", "a", "web", body("maxUnavailable", 1), "other", true, "")
	require.NoError(t, err)
	_, err = c.Apply(ctx, "PodDisruptionBudget", "a", "web", body("maxUnavailable", 2), "m", false, "")
	require.Equal(t, []string{`conflict with "other" .spec.maxUnavailable`}, conflictManagers(t, err))

	_, err = c.Apply(ctx, "PodDisruptionBudget", "a", "web", []byte(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"uid":"gone"},"spec":{"minAvailable":1}}`), "m", false, "")
	require.True(t, apierrors.IsConflict(err), "a uid precondition: %v", err)

	_, err = c.Apply(ctx, "PodDisruptionBudget", "a", "gone", []byte(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"uid":"u"},"spec":{"minAvailable":1}}`), "m", false, "")
	require.True(t, apierrors.IsConflict(err), "an absent object under a uid is a conflict, as on the API server: %v", err)
	require.ErrorContains(t, err, "uid mismatch: the provided object specified uid u, and no existing object was found")
}
