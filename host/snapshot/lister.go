package snapshot

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Lister reads the cluster state a reconcile input is built from. The live
// host implements it with informer listers (no API calls); memcluster
// implements it in memory. Get methods return an error satisfying
// apierrors.IsNotFound when the object does not exist. Returned objects are
// shared with the cache: callers must not modify them.
type Lister interface {
	GetStatefulSet(namespace, name string) (*appsv1.StatefulSet, error)
	ListPods(namespace string) ([]*corev1.Pod, error)
	GetClaim(namespace, name string) (*corev1.PersistentVolumeClaim, error)
	// ListClaims lists the claims of a namespace. The statefulset builder
	// needs it to find claims of every ordinal, including those of replicas
	// removed by a scale-down, which no spec field names any more.
	ListClaims(namespace string) ([]*corev1.PersistentVolumeClaim, error)
	GetVolume(name string) (*corev1.PersistentVolume, error)
	GetStorageClass(name string) (*storagev1.StorageClass, error)
	// ListVolumeClaimUpdates lists kubeplug.dev/v1alpha1 VolumeClaimUpdates.
	ListVolumeClaimUpdates(namespace string) ([]*unstructured.Unstructured, error)
}
