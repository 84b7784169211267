package kube

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// Cache holds the informers of every kind a reconcile input is built from:
// StatefulSets, Pods, PersistentVolumeClaims, PersistentVolumes,
// StorageClasses and, when the cluster serves the CRD, VolumeClaimUpdates.
// It implements snapshot.Lister from their stores.
type Cache struct {
	factory  informers.SharedInformerFactory
	dynamic  dynamicinformer.DynamicSharedInformerFactory
	sets     appslisters.StatefulSetLister
	pods     corelisters.PodLister
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	updates  cache.GenericLister // nil when the CRD is not served
	informer map[string]cache.SharedIndexInformer
}

var _ snapshot.Lister = (*Cache)(nil)

// ClaimUpdateGVR is the resource of kubeplug.dev VolumeClaimUpdates.
var ClaimUpdateGVR = schema.GroupVersionResource{Group: "kubeplug.dev", Version: "v1alpha1", Resource: "volumeclaimupdates"}

// NewCache sets up the informers; Start starts them. namespace limits the
// namespaced informers to one namespace ("" for all). resync is the
// informers' resync period (0 disables it): every object is delivered again
// as an update, so every subject is reconciled again, as a safety net.
// The VolumeClaimUpdate informer exists only if discovery finds the CRD.
func NewCache(client kubernetes.Interface, dyn dynamic.Interface, namespace string, resync time.Duration) (*Cache, error) {
	f := informers.NewSharedInformerFactoryWithOptions(client, resync, informers.WithNamespace(namespace))
	c := &Cache{
		factory: f,
		sets:    f.Apps().V1().StatefulSets().Lister(),
		pods:    f.Core().V1().Pods().Lister(),
		claims:  f.Core().V1().PersistentVolumeClaims().Lister(),
		volumes: f.Core().V1().PersistentVolumes().Lister(),
		classes: f.Storage().V1().StorageClasses().Lister(),
		informer: map[string]cache.SharedIndexInformer{
			abi.KindStatefulSet:           f.Apps().V1().StatefulSets().Informer(),
			abi.KindPod:                   f.Core().V1().Pods().Informer(),
			abi.KindPersistentVolumeClaim: f.Core().V1().PersistentVolumeClaims().Informer(),
			abi.KindPersistentVolume:      f.Core().V1().PersistentVolumes().Informer(),
			abi.KindStorageClass:          f.Storage().V1().StorageClasses().Informer(),
		},
	}
	served, err := serves(client, ClaimUpdateGVR)
	if err != nil {
		return nil, err
	}
	if served {
		c.dynamic = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, resync, namespace, nil)
		gi := c.dynamic.ForResource(ClaimUpdateGVR)
		c.updates = gi.Lister()
		c.informer[abi.KindVolumeClaimUpdate] = gi.Informer()
	}
	return c, nil
}

// serves asks discovery whether the API server serves gvr.
func serves(client kubernetes.Interface, gvr schema.GroupVersionResource) (bool, error) {
	list, err := client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", gvr.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

// Informer returns the informer of kind, or nil if the cache has none (a
// VolumeClaimUpdate when the CRD is not served).
func (c *Cache) Informer(kind string) cache.SharedIndexInformer { return c.informer[kind] }

// Start starts every informer; they stop when ctx is done.
func (c *Cache) Start(ctx context.Context) {
	c.factory.Start(ctx.Done())
	if c.dynamic != nil {
		c.dynamic.Start(ctx.Done())
	}
}

// WaitForSync blocks until every informer has synced or ctx is done, and
// reports whether they all synced.
func (c *Cache) WaitForSync(ctx context.Context) bool {
	for _, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return false
		}
	}
	if c.dynamic != nil {
		for _, ok := range c.dynamic.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return false
			}
		}
	}
	return true
}

// Shutdown waits for the informers' goroutines after their context is done.
func (c *Cache) Shutdown() {
	c.factory.Shutdown()
	if c.dynamic != nil {
		c.dynamic.Shutdown()
	}
}

func (c *Cache) GetStatefulSet(namespace, name string) (*appsv1.StatefulSet, error) {
	return c.sets.StatefulSets(namespace).Get(name)
}

func (c *Cache) ListPods(namespace string) ([]*corev1.Pod, error) {
	return c.pods.Pods(namespace).List(labels.Everything())
}

func (c *Cache) GetClaim(namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	return c.claims.PersistentVolumeClaims(namespace).Get(name)
}

func (c *Cache) ListClaims(namespace string) ([]*corev1.PersistentVolumeClaim, error) {
	return c.claims.PersistentVolumeClaims(namespace).List(labels.Everything())
}

func (c *Cache) GetVolume(name string) (*corev1.PersistentVolume, error) {
	return c.volumes.Get(name)
}

func (c *Cache) GetStorageClass(name string) (*storagev1.StorageClass, error) {
	return c.classes.Get(name)
}

func (c *Cache) ListVolumeClaimUpdates(namespace string) ([]*unstructured.Unstructured, error) {
	if c.updates == nil {
		return nil, nil
	}
	objs, err := c.updates.ByNamespace(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out, nil
}
