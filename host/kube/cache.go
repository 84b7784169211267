package kube

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
// It implements snapshot.Lister from their stores and indexes. Every object
// goes through Slim before it is stored.
type Cache struct {
	scoped   informers.SharedInformerFactory // namespaced kinds, restricted by Options
	cluster  informers.SharedInformerFactory // cluster-scoped kinds, whole
	dynamic  dynamicinformer.DynamicSharedInformerFactory
	sets     appslisters.StatefulSetLister
	pods     cache.Indexer
	claims   corelisters.PersistentVolumeClaimLister
	claimIdx cache.Indexer
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	updates  cache.GenericLister // nil when the CRD is not served
	informer map[string]cache.SharedIndexInformer
}

var _ snapshot.Lister = (*Cache)(nil)

// ClaimUpdateGVR is the resource of kubeplug.dev VolumeClaimUpdates.
var ClaimUpdateGVR = schema.GroupVersionResource{Group: "kubeplug.dev", Version: "v1alpha1", Resource: "volumeclaimupdates"}

// Options say what a Cache watches.
type Options struct {
	// Namespace limits the namespaced informers to one namespace; "" is
	// all.
	Namespace string
	// LabelSelector, when not empty, limits the namespaced informers to
	// the objects it selects: the API server lists and watches only those
	// (a shard of the cluster; see config.Shard). Cluster-scoped kinds are
	// watched whole.
	LabelSelector string
	// Resync is the informers' resync period (0 disables it): every
	// object is delivered again as an update, so every subject is
	// reconciled again, as a safety net.
	Resync time.Duration
}

// NewCache sets up the informers; Start starts them. The VolumeClaimUpdate
// informer exists only if discovery finds the CRD.
func NewCache(client kubernetes.Interface, dyn dynamic.Interface, o Options) (*Cache, error) {
	restrict := func(lo *metav1.ListOptions) {
		if o.LabelSelector != "" {
			lo.LabelSelector = o.LabelSelector
		}
	}
	scoped := informers.NewSharedInformerFactoryWithOptions(client, o.Resync,
		informers.WithNamespace(o.Namespace), informers.WithTweakListOptions(restrict), informers.WithTransform(Slim))
	cluster := informers.NewSharedInformerFactoryWithOptions(client, o.Resync, informers.WithTransform(Slim))
	pods := scoped.Core().V1().Pods().Informer()
	claims := scoped.Core().V1().PersistentVolumeClaims().Informer()
	if err := pods.AddIndexers(cache.Indexers{ControllerIndex: PodControllerKeys}); err != nil {
		return nil, fmt.Errorf("index pods: %w", err)
	}
	if err := claims.AddIndexers(cache.Indexers{ClaimSetIndex: ClaimSetKeys}); err != nil {
		return nil, fmt.Errorf("index claims: %w", err)
	}
	c := &Cache{
		scoped:   scoped,
		cluster:  cluster,
		sets:     scoped.Apps().V1().StatefulSets().Lister(),
		pods:     pods.GetIndexer(),
		claims:   scoped.Core().V1().PersistentVolumeClaims().Lister(),
		claimIdx: claims.GetIndexer(),
		volumes:  cluster.Core().V1().PersistentVolumes().Lister(),
		classes:  cluster.Storage().V1().StorageClasses().Lister(),
		informer: map[string]cache.SharedIndexInformer{
			abi.KindStatefulSet:           scoped.Apps().V1().StatefulSets().Informer(),
			abi.KindPod:                   pods,
			abi.KindPersistentVolumeClaim: claims,
			abi.KindPersistentVolume:      cluster.Core().V1().PersistentVolumes().Informer(),
			abi.KindStorageClass:          cluster.Storage().V1().StorageClasses().Informer(),
		},
	}
	served, err := serves(client, ClaimUpdateGVR)
	if err != nil {
		return nil, err
	}
	if served {
		c.dynamic = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, o.Resync, o.Namespace, restrict)
		gi := c.dynamic.ForResource(ClaimUpdateGVR)
		if err := gi.Informer().SetTransform(Slim); err != nil {
			return nil, fmt.Errorf("watch %s: %w", ClaimUpdateGVR.Resource, err)
		}
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
	c.scoped.Start(ctx.Done())
	c.cluster.Start(ctx.Done())
	if c.dynamic != nil {
		c.dynamic.Start(ctx.Done())
	}
}

// WaitForSync blocks until every informer has synced or ctx is done, and
// reports whether they all synced.
func (c *Cache) WaitForSync(ctx context.Context) bool {
	for _, f := range []informers.SharedInformerFactory{c.scoped, c.cluster} {
		for _, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return false
			}
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
	c.scoped.Shutdown()
	c.cluster.Shutdown()
	if c.dynamic != nil {
		c.dynamic.Shutdown()
	}
}

func (c *Cache) GetStatefulSet(namespace, name string) (*appsv1.StatefulSet, error) {
	return c.sets.StatefulSets(namespace).Get(name)
}

func (c *Cache) ListControlledPods(namespace string, controller types.UID) ([]*corev1.Pod, error) {
	return byIndex[*corev1.Pod](c.pods, ControllerIndex, controllerKey(namespace, controller))
}

func (c *Cache) GetClaim(namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	return c.claims.PersistentVolumeClaims(namespace).Get(name)
}

func (c *Cache) ListClaimsNamedFor(namespace, set string) ([]*corev1.PersistentVolumeClaim, error) {
	return byIndex[*corev1.PersistentVolumeClaim](c.claimIdx, ClaimSetIndex, namespace+"/"+set)
}

// byIndex returns the objects of type T that indexer has under key in the
// named index.
func byIndex[T any](indexer cache.Indexer, index, key string) ([]T, error) {
	objs, err := indexer.ByIndex(index, key)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
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
