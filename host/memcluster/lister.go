package memcluster

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// newTyped returns an empty typed object for a kind of abi.Kinds() that
// client-go's scheme knows (the built-in kinds), nil for the others (a
// VolumeClaimUpdate has no Go type: it stays unstructured) and for kinds no
// reconcile input holds.
func newTyped(kind string) runtime.Object {
	info, ok := abi.LookupKind(kind)
	if !ok {
		return nil
	}
	gv, err := schema.ParseGroupVersion(info.APIVersion)
	if err != nil {
		return nil
	}
	obj, err := scheme.Scheme.New(gv.WithKind(kind))
	if err != nil {
		return nil
	}
	return obj
}

// canonical returns obj as the API server would store it: for built-in
// kinds decoded into the Go type and encoded again, which drops unknown
// fields and canonicalises quantities ("1024Mi" becomes "1Gi"). Objects of
// other kinds are returned as they are.
func canonical(obj map[string]any) (map[string]any, error) {
	typed := newTyped(str(obj, "kind"))
	if typed == nil {
		return obj, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
		return nil, err
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, err
	}
	// ToUnstructured may leave Go-typed numbers; make the map JSON-shaped
	// like every other stored object.
	v, err := JSONValue(out)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// The methods below implement snapshot.Lister. Every call converts the
// stored object afresh, so callers get objects of their own.

// GetObject returns the named object of kind: of its Go type for a
// built-in kind (newTyped), an *unstructured.Unstructured for another.
func (c *Cluster) GetObject(kind, namespace, name string) (runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj, ok := c.objects[c.key(kind, namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(groupResource(kind), name)
	}
	return decode(obj)
}

// ByIndex returns the objects of idx.Kind that idx.Keys files under key,
// sorted by namespace and name, each decoded as GetObject decodes it.
//
// It runs idx.Keys over every stored object of the kind on each call,
// rather than keeping an index up to date on writes: the clusters it serves
// hold a case file's objects (tens), and the scan neither copies nor
// decodes an object it does not return, so it costs less than the typed
// listings it replaces, which copied every object of the kind. Keys gets
// the stored map as an *unstructured.Unstructured, which it must not
// modify.
func (c *Cluster) ByIndex(idx snapshot.Index, key string) ([]runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Only the objects filed under key are sorted and decoded: a set's
	// pods among every pod of the case.
	var filed []Key
	for k, obj := range c.objects {
		if k.Kind != idx.Kind {
			continue
		}
		keys, err := idx.Keys(&unstructured.Unstructured{Object: obj})
		if err != nil {
			return nil, fmt.Errorf("index %s: %s: %w", idx.Name, k, err)
		}
		if slices.Contains(keys, key) {
			filed = append(filed, k)
		}
	}
	sortKeys(filed)
	out := make([]runtime.Object, 0, len(filed))
	for _, k := range filed {
		o, err := decode(c.objects[k])
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// decode returns a copy of obj, a stored object, that the caller owns: of
// its kind's Go type for a built-in kind (newTyped), which converting it
// builds afresh, else an *unstructured.Unstructured of a deep copy. Call
// with c.mu held.
func decode(obj map[string]any) (runtime.Object, error) {
	typed := newTyped(str(obj, "kind"))
	if typed == nil {
		return &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
		return nil, fmt.Errorf("convert %s: %w", keyOf(obj), err)
	}
	return typed, nil
}

// ListPods returns the pods of namespace (every namespace for ""), sorted
// by namespace and name.
func (c *Cluster) ListPods(namespace string) ([]*corev1.Pod, error) {
	return listTyped[corev1.Pod](c, abi.KindPod, namespace)
}

// ListClaims returns the claims of namespace (every namespace for ""),
// sorted by namespace and name.
func (c *Cluster) ListClaims(namespace string) ([]*corev1.PersistentVolumeClaim, error) {
	return listTyped[corev1.PersistentVolumeClaim](c, abi.KindPersistentVolumeClaim, namespace)
}

// listTyped converts the stored objects of kind in namespace ("" for all).
func listTyped[T any](c *Cluster, kind, namespace string) ([]*T, error) {
	var out []*T
	for _, obj := range c.List(kind) {
		if namespace != "" && str(metadata(obj), "namespace") != namespace {
			continue
		}
		t := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, t); err != nil {
			return nil, fmt.Errorf("convert %s: %w", keyOf(obj), err)
		}
		out = append(out, t)
	}
	return out, nil
}
