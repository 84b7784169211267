package kube

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// Cache holds the informers of every kind a reconcile input is built from:
// the kind of each subject of abi's table and its related kinds (today
// StatefulSets, Pods, PersistentVolumeClaims, PersistentVolumes,
// StorageClasses and, when the cluster serves the CRD, VolumeClaimUpdates).
// Each informer is the shared informer factories' for the kind's resource
// (ForResource, keyed by abi's group/version/resource and scope), so a new
// subject kind needs nothing here. It implements snapshot.Lister from their
// stores and indexes. Every object goes through Slim before it is stored.
type Cache struct {
	scoped  informers.SharedInformerFactory // namespaced kinds, restricted by Options
	cluster informers.SharedInformerFactory // cluster-scoped kinds, whole
	// dynamic watches the kinds the typed factories do not know (custom
	// resources): namespaced ones restricted as scoped is, cluster-scoped
	// ones whole. nil until such a kind is served.
	dynamic  map[bool]dynamicinformer.DynamicSharedInformerFactory
	informer map[string]cache.SharedIndexInformer
	lister   map[string]cache.GenericLister
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

// WatchedKinds returns the kinds a Cache watches: each subject's kind and
// its related kinds, as abi's subject table lists them, each once.
func WatchedKinds() []string {
	var kinds []string
	for _, name := range abi.Subjects() {
		s, _ := abi.Subject(name).Info()
		for _, k := range append([]string{s.Kind}, s.Related...) {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	return kinds
}

// NewCache sets up the informers; Start starts them. The informer of a
// custom resource (a VolumeClaimUpdate) exists only if discovery finds its
// CRD.
func NewCache(client kubernetes.Interface, dyn dynamic.Interface, o Options) (*Cache, error) {
	restrict := func(lo *metav1.ListOptions) {
		if o.LabelSelector != "" {
			lo.LabelSelector = o.LabelSelector
		}
	}
	scoped := informers.NewSharedInformerFactoryWithOptions(client, o.Resync,
		informers.WithNamespace(o.Namespace), informers.WithTweakListOptions(restrict), informers.WithTransform(Slim))
	cluster := informers.NewSharedInformerFactoryWithOptions(client, o.Resync, informers.WithTransform(Slim))
	c := &Cache{
		scoped:   scoped,
		cluster:  cluster,
		dynamic:  map[bool]dynamicinformer.DynamicSharedInformerFactory{},
		informer: map[string]cache.SharedIndexInformer{},
		lister:   map[string]cache.GenericLister{},
	}
	for _, kind := range WatchedKinds() {
		gvr, namespaced, err := GVR(kind)
		if err != nil {
			return nil, err
		}
		factory := cluster
		if namespaced {
			factory = scoped
		}
		gi, err := factory.ForResource(gvr)
		if err != nil {
			// Not a built-in resource: watched through the dynamic client,
			// when the API server serves it.
			served, err := serves(client, gvr)
			if err != nil {
				return nil, err
			}
			if !served {
				continue
			}
			if c.dynamic[namespaced] == nil {
				ns, tweak := o.Namespace, dynamicinformer.TweakListOptionsFunc(restrict)
				if !namespaced {
					ns, tweak = metav1.NamespaceAll, nil
				}
				c.dynamic[namespaced] = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, o.Resync, ns, tweak)
			}
			gi = c.dynamic[namespaced].ForResource(gvr)
			if err := gi.Informer().SetTransform(Slim); err != nil {
				return nil, fmt.Errorf("watch %s: %w", gvr.Resource, err)
			}
		}
		c.informer[kind], c.lister[kind] = gi.Informer(), gi.Lister()
	}
	// The indexes the builders read related objects by (snapshot.Indexes),
	// each an indexer of its kind's informer: a StatefulSet's input reads
	// its own objects rather than scanning its namespace. A kind not served
	// (the CRD not installed) has no informer, and its index no objects.
	for _, idx := range snapshot.Indexes() {
		inf := c.informer[idx.Kind]
		if inf == nil {
			continue
		}
		if err := inf.AddIndexers(cache.Indexers{idx.Name: indexFunc(idx)}); err != nil {
			return nil, fmt.Errorf("index %s by %s: %w", idx.Kind, idx.Name, err)
		}
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
	for _, f := range c.dynamic {
		f.Start(ctx.Done())
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
	for _, f := range c.dynamic {
		for _, ok := range f.WaitForCacheSync(ctx.Done()) {
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
	for _, f := range c.dynamic {
		f.Shutdown()
	}
}

// GetObject returns the object of kind named namespace/name (name alone for a
// cluster-scoped kind) from the kind's informer: a typed object for a
// built-in kind, an *unstructured.Unstructured for a custom one. A kind the
// cache does not watch has no objects.
func (c *Cache) GetObject(kind, namespace, name string) (k8sruntime.Object, error) {
	l := c.lister[kind]
	if l == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: abi.KindOf(kind).Resource}, name)
	}
	if abi.KindOf(kind).Namespaced {
		return l.ByNamespace(namespace).Get(name)
	}
	return l.Get(name)
}

// ByIndex returns the objects of idx.Kind that idx files under key, from
// the kind's informer's indexer.
func (c *Cache) ByIndex(idx snapshot.Index, key string) ([]k8sruntime.Object, error) {
	inf := c.informer[idx.Kind]
	if inf == nil {
		return nil, nil
	}
	objs, err := inf.GetIndexer().ByIndex(idx.Name, key)
	if err != nil {
		return nil, err
	}
	out := make([]k8sruntime.Object, 0, len(objs))
	for _, o := range objs {
		if ro, ok := o.(k8sruntime.Object); ok {
			out = append(out, ro)
		}
	}
	return out, nil
}

// indexFunc is idx as an informer's index function.
func indexFunc(idx snapshot.Index) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		o, ok := obj.(k8sruntime.Object)
		if !ok {
			return nil, fmt.Errorf("index %s: %T is not an object", idx.Name, obj)
		}
		return idx.Keys(o)
	}
}
