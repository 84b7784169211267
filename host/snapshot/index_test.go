package snapshot_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// TestIndexKeys: each index files an object under the keys the builder
// reads it by, the same from the object's Go type and from its unstructured
// form (the live cache holds the one, memcluster hands Keys the other), and
// under none when the object has no key.
func TestIndexKeys(t *testing.T) {
	notController := newPod("ns", "web-0", "u1")
	notController.OwnerReferences[0].Controller = new(false)
	for _, tc := range []struct {
		name string
		idx  snapshot.Index
		obj  runtime.Object
		want []string
	}{
		{"controlled pod", snapshot.ControlledPods, newPod("ns", "web-0", "u1"), []string{"ns/u1"}},
		{"owned, not controlled", snapshot.ControlledPods, notController, nil},
		{"no owner", snapshot.ControlledPods, newPod("ns", "stray", ""), nil},
		{"claim of one set", snapshot.ClaimsBySetName, newClaim("ns", "data-web-0", nil), []string{"ns/web"}},
		{"claim of either of two sets", snapshot.ClaimsBySetName, newClaim("ns", "data-a-web-12", nil), []string{"ns/a-web", "ns/web"}},
		{"claim without ordinal", snapshot.ClaimsBySetName, newClaim("ns", "data-web", nil), nil},
		{"claim with a non-canonical ordinal", snapshot.ClaimsBySetName, newClaim("ns", "data-web-01", nil), nil},
		{"claim without template", snapshot.ClaimsBySetName, newClaim("ns", "web-0", nil), nil},
		{"update naming a set", snapshot.ClaimUpdatesBySet, claimUpdateObject("ns", "grow", "web"), []string{"ns/web"}},
		{"update naming none", snapshot.ClaimUpdatesBySet, claimUpdateObject("ns", "grow", ""), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.idx.Keys(tc.obj)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			if _, ok := tc.obj.(*unstructured.Unstructured); ok {
				return
			}
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc.obj)
			require.NoError(t, err)
			got, err = tc.idx.Keys(&unstructured.Unstructured{Object: u})
			require.NoError(t, err)
			require.Equal(t, tc.want, got, "the unstructured form is filed elsewhere")
		})
	}
}

// TestIndexKeysOfMalformedObjects: a field of the wrong type files an
// object under no key (as the builder's own checks would skip it), without
// an error, since an informer's indexer panics on one; only an object Keys
// cannot read at all is an error, which names the index.
func TestIndexKeysOfMalformedObjects(t *testing.T) {
	numbered := claimUpdateObject("ns", "grow", "web")
	require.NoError(t, unstructured.SetNestedField(numbered.Object, int64(3), "spec", "statefulSetName"))
	noSpec := claimUpdateObject("ns", "grow", "web")
	noSpec.Object["spec"] = "web"
	for _, tc := range []struct {
		name string
		idx  snapshot.Index
		obj  map[string]any
	}{
		{"owner references not a list", snapshot.ControlledPods, map[string]any{"apiVersion": "v1", "kind": abi.KindPod,
			"metadata": map[string]any{"namespace": "ns", "name": "web-0", "ownerReferences": "web"}}},
		{"owner reference not an object", snapshot.ControlledPods, map[string]any{"apiVersion": "v1", "kind": abi.KindPod,
			"metadata": map[string]any{"namespace": "ns", "name": "web-0", "ownerReferences": []any{"web"}}}},
		{"metadata not an object", snapshot.ClaimsBySetName, map[string]any{"apiVersion": "v1", "kind": abi.KindPersistentVolumeClaim,
			"metadata": "data-web-0"}},
		{"set name not a string", snapshot.ClaimUpdatesBySet, numbered.Object},
		{"spec not an object", snapshot.ClaimUpdatesBySet, noSpec.Object},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.idx.Keys(&unstructured.Unstructured{Object: tc.obj})
			require.NoError(t, err)
			require.Empty(t, got)
		})
	}

	for _, idx := range []snapshot.Index{snapshot.ControlledPods, snapshot.ClaimsBySetName} {
		_, err := idx.Keys(&metav1.Status{})
		require.ErrorContains(t, err, "index "+idx.Name, "an object without metadata")
	}
	_, err := snapshot.ClaimUpdatesBySet.Keys(&corev1.PersistentVolumeClaim{})
	require.ErrorContains(t, err, "index "+snapshot.ClaimUpdatesBySet.Name)
}

// TestIndexes: every index is of a kind of abi's table, and no two of a
// kind share a name (an informer refuses a second indexer of one name).
func TestIndexes(t *testing.T) {
	names := map[string]bool{}
	for _, idx := range snapshot.Indexes() {
		_, ok := abi.LookupKind(idx.Kind)
		require.True(t, ok, "index %s is of kind %q, not in abi's table", idx.Name, idx.Kind)
		require.NotNil(t, idx.Keys, idx.Name)
		require.False(t, names[idx.Kind+" "+idx.Name], "two indexes of %s are named %s", idx.Kind, idx.Name)
		names[idx.Kind+" "+idx.Name] = true
	}
}
