package memcluster

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
	obj, ok := c.Get(kind, namespace, name)
	if !ok {
		return nil, apierrors.NewNotFound(groupResource(kind), name)
	}
	typed := newTyped(kind)
	if typed == nil {
		return &unstructured.Unstructured{Object: obj}, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
		return nil, fmt.Errorf("convert %s: %w", c.key(kind, namespace, name), err)
	}
	return typed, nil
}

// GetStatefulSet returns the named StatefulSet.
func (c *Cluster) GetStatefulSet(namespace, name string) (*appsv1.StatefulSet, error) {
	out := &appsv1.StatefulSet{}
	return out, c.getTyped(abi.KindStatefulSet, namespace, name, out)
}

// ListPods returns the pods of namespace (every namespace for ""), sorted
// by namespace and name.
func (c *Cluster) ListPods(namespace string) ([]*corev1.Pod, error) {
	return listTyped[corev1.Pod](c, abi.KindPod, namespace, nil)
}

// ListControlledPods returns the pods of namespace whose controller
// reference has the UID controller, sorted by name. Only those are
// converted, as the live cache's index reads only those.
func (c *Cluster) ListControlledPods(namespace string, controller types.UID) ([]*corev1.Pod, error) {
	return listTyped[corev1.Pod](c, abi.KindPod, namespace, func(obj map[string]any) bool {
		ref := metav1.GetControllerOfNoCopy(&unstructured.Unstructured{Object: obj})
		return ref != nil && ref.UID == controller
	})
}

// GetClaim returns the named PersistentVolumeClaim.
func (c *Cluster) GetClaim(namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	out := &corev1.PersistentVolumeClaim{}
	return out, c.getTyped(abi.KindPersistentVolumeClaim, namespace, name, out)
}

// ListClaims returns the claims of namespace (every namespace for ""),
// sorted by namespace and name.
func (c *Cluster) ListClaims(namespace string) ([]*corev1.PersistentVolumeClaim, error) {
	return listTyped[corev1.PersistentVolumeClaim](c, abi.KindPersistentVolumeClaim, namespace, nil)
}

// ListClaimsNamedFor returns the claims of namespace whose names may be
// claims of set (snapshot.SetNamesInClaimName), sorted by name. Only those
// are converted.
func (c *Cluster) ListClaimsNamedFor(namespace, set string) ([]*corev1.PersistentVolumeClaim, error) {
	return listTyped[corev1.PersistentVolumeClaim](c, abi.KindPersistentVolumeClaim, namespace, func(obj map[string]any) bool {
		return slices.Contains(snapshot.SetNamesInClaimName(str(metadata(obj), "name")), set)
	})
}

// GetVolume returns the named PersistentVolume.
func (c *Cluster) GetVolume(name string) (*corev1.PersistentVolume, error) {
	out := &corev1.PersistentVolume{}
	return out, c.getTyped(abi.KindPersistentVolume, "", name, out)
}

// GetStorageClass returns the named StorageClass.
func (c *Cluster) GetStorageClass(name string) (*storagev1.StorageClass, error) {
	out := &storagev1.StorageClass{}
	return out, c.getTyped(abi.KindStorageClass, "", name, out)
}

// ListVolumeClaimUpdates returns the VolumeClaimUpdates of namespace (every
// namespace for ""), sorted by namespace and name.
func (c *Cluster) ListVolumeClaimUpdates(namespace string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, obj := range c.List(abi.KindVolumeClaimUpdate) {
		u := &unstructured.Unstructured{Object: obj}
		if namespace == "" || u.GetNamespace() == namespace {
			out = append(out, u)
		}
	}
	return out, nil
}

func (c *Cluster) getTyped(kind, namespace, name string, into any) error {
	obj, ok := c.Get(kind, namespace, name)
	if !ok {
		return apierrors.NewNotFound(groupResource(kind), name)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into); err != nil {
		return fmt.Errorf("convert %s: %w", c.key(kind, namespace, name), err)
	}
	return nil
}

// listTyped converts the stored objects of kind in namespace ("" for all)
// that keep (nil keeps all) accepts.
func listTyped[T any](c *Cluster, kind, namespace string, keep func(map[string]any) bool) ([]*T, error) {
	var out []*T
	for _, obj := range c.List(kind) {
		if namespace != "" && str(metadata(obj), "namespace") != namespace {
			continue
		}
		if keep != nil && !keep(obj) {
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
