package snapshot

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Lister reads the cluster state a reconcile input is built from. The live
// host implements it with informer listers and indexes (no API calls, no
// namespace scans); memcluster
// implements it in memory. Get methods return an error satisfying
// apierrors.IsNotFound when the object does not exist. Returned objects are
// shared with the cache: callers must not modify them.
type Lister interface {
	// GetObject returns the object of kind (one of abi.Kinds()) named
	// namespace/name, or name alone for a cluster-scoped kind: a typed
	// object for a built-in kind, an *unstructured.Unstructured for a
	// custom one. A subject's builder reads its subject through it, so a
	// new subject kind adds no method here; the methods below are the
	// related objects' queries.
	GetObject(kind, namespace, name string) (runtime.Object, error)
	GetStatefulSet(namespace, name string) (*appsv1.StatefulSet, error)
	// ListControlledPods lists the pods of namespace whose controller
	// reference has the UID controller: a StatefulSet's pods.
	ListControlledPods(namespace string, controller types.UID) ([]*corev1.Pod, error)
	GetClaim(namespace, name string) (*corev1.PersistentVolumeClaim, error)
	// ListClaimsNamedFor lists the claims of namespace named
	// "<template>-<set>-<ordinal>" for any non-empty template and any
	// ordinal (those for which SetNamesInClaimName has set), whatever
	// their owners: the statefulset builder finds a set's claims by name,
	// those of replicas removed by a scale-down included, which no spec
	// field names any more, and keeps those of the set's templates.
	ListClaimsNamedFor(namespace, set string) ([]*corev1.PersistentVolumeClaim, error)
	GetVolume(name string) (*corev1.PersistentVolume, error)
	GetStorageClass(name string) (*storagev1.StorageClass, error)
	// ListVolumeClaimUpdates lists kubeplug.dev/v1alpha1 VolumeClaimUpdates.
	ListVolumeClaimUpdates(namespace string) ([]*unstructured.Unstructured, error)
}

// get reads the object of kind named namespace/name from l as a T (the
// kind's Go type, e.g. *appsv1.Deployment).
func get[T runtime.Object](l Lister, kind, namespace, name string) (T, error) {
	var none T
	obj, err := l.GetObject(kind, namespace, name)
	if err != nil {
		return none, err
	}
	t, ok := obj.(T)
	if !ok {
		return none, fmt.Errorf("get %s %s/%s: the lister holds a %T, want a %T", kind, namespace, name, obj, none)
	}
	return t, nil
}
