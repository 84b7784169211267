package snapshot

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Lister reads the cluster state a reconcile input is built from. The live
// host implements it with informer listers and indexes (no API calls, no
// namespace scans); memcluster
// implements it in memory. Get methods return an error satisfying
// apierrors.IsNotFound when the object does not exist. Returned objects are
// shared with the cache: callers must not modify them.
type Lister interface {
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
