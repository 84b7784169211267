package snapshot

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
)

// Index is a query of related objects every Lister answers from an index
// of its own, as controller-runtime's IndexField registers one: the objects
// of Kind that Keys files under a key. The live host registers each as an
// informer indexer of its kind; memcluster and kubeplug check run Keys over
// the objects of the kind.
type Index struct {
	// Name names the index (an informer indexer's name).
	Name string
	// Kind is the kind of object the index files.
	Kind string
	// Keys returns the keys an object of Kind is filed under. It is given
	// the object as the Lister holds it, so it reads either form the same
	// (meta.Accessor, unstructured's accessors): the live cache holds a
	// built-in kind's Go type (*corev1.Pod), memcluster hands it every
	// object as an *unstructured.Unstructured over its stored map. It must
	// not modify obj, and a field of the wrong type is no key rather than
	// an error: an informer's indexer panics on an error.
	Keys func(obj runtime.Object) ([]string, error)
}

// The indexes' names, as informer indexers are named.
const (
	controllerIndex  = "kubeplug.dev/controller"
	claimSetIndex    = "kubeplug.dev/set-by-claim-name"
	claimUpdateIndex = "kubeplug.dev/statefulset-name"
)

var (
	// ControlledPods files Pods under "namespace/uid" of their controller
	// reference: a StatefulSet's pods.
	ControlledPods = Index{Name: controllerIndex, Kind: abi.KindPod, Keys: controllerKeys}
	// ClaimsBySetName files PersistentVolumeClaims under "namespace/set"
	// for every set their name could be a claim of (SetNamesInClaimName):
	// by name, whatever their owners, so that the claims of replicas a
	// scale-down removed, which no spec field names any more, are found.
	ClaimsBySetName = Index{Name: claimSetIndex, Kind: abi.KindPersistentVolumeClaim, Keys: claimSetKeys}
	// ClaimUpdatesBySet files VolumeClaimUpdates under
	// "namespace/spec.statefulSetName", the set they name.
	ClaimUpdatesBySet = Index{Name: claimUpdateIndex, Kind: abi.KindVolumeClaimUpdate, Keys: claimUpdateSetKeys}
)

// Indexes returns every index a Lister keeps.
func Indexes() []Index { return []Index{ControlledPods, ClaimsBySetName, ClaimUpdatesBySet} }

// Key is the key of namespace and value in an index of namespaced
// objects.
func Key(namespace, value string) string { return namespace + "/" + value }

func controllerKeys(obj runtime.Object) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", controllerIndex, err)
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		return []string{Key(m.GetNamespace(), string(ref.UID))}, nil
	}
	return nil, nil
}

func claimSetKeys(obj runtime.Object) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", claimSetIndex, err)
	}
	sets := SetNamesInClaimName(m.GetName())
	for i, s := range sets {
		sets[i] = Key(m.GetNamespace(), s)
	}
	return sets, nil
}

func claimUpdateSetKeys(obj runtime.Object) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("index %s: want a VolumeClaimUpdate as unstructured, got %T", claimUpdateIndex, obj)
	}
	set, _, _ := unstructured.NestedString(u.Object, "spec", "statefulSetName")
	if set == "" {
		return nil, nil
	}
	return []string{Key(u.GetNamespace(), set)}, nil
}
