package snapshot

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// Lister reads the cluster state a reconcile input is built from, as
// controller-runtime's client.Reader reads its cache: one object by name, or
// the objects one of the indexes (Indexes) files under a key. The live host
// implements it with its informers and their indexers (no API calls, no
// namespace scans); memcluster in memory; kubeplug check over past versions
// of a cluster. A subject's builder and its related kinds' key functions
// read through these two methods and the typed helpers below, so a new
// relation is a new Index, not a method of every Lister.
//
// GetObject returns an error satisfying apierrors.IsNotFound when the object
// does not exist. Objects of a built-in kind are of its Go type
// (*appsv1.StatefulSet), of another an *unstructured.Unstructured. Returned
// objects are shared with the cache: callers must not modify them.
type Lister interface {
	// GetObject returns the object of kind (one of abi.Kinds()) named
	// namespace/name, or name alone for a cluster-scoped kind.
	GetObject(kind, namespace, name string) (runtime.Object, error)
	// ByIndex returns the objects of idx.Kind that idx files under key, in
	// any order.
	ByIndex(idx Index, key string) ([]runtime.Object, error)
}

// get reads the object of kind named namespace/name from l as a T (the
// kind's Go type, e.g. *appsv1.StatefulSet).
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

// byIndex reads the objects idx files under key from l, each as a T.
func byIndex[T runtime.Object](l Lister, idx Index, key string) ([]T, error) {
	objs, err := l.ByIndex(idx, key)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		t, ok := o.(T)
		if !ok {
			var none T
			return nil, fmt.Errorf("index %s under %q: the lister holds a %T, want a %T", idx.Name, key, o, none)
		}
		out = append(out, t)
	}
	return out, nil
}
