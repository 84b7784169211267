package snapshot_test

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

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// fakeLister is a map-backed snapshot.Lister. List methods return objects in
// insertion order, so tests can check that the builder sorts.
type fakeLister struct {
	sets    map[string]*appsv1.StatefulSet
	pods    []*corev1.Pod
	claims  []*corev1.PersistentVolumeClaim
	volumes map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
	updates []*unstructured.Unstructured
	// err, when set, is returned by every method.
	err error
	// gets counts GetStatefulSet calls.
	gets int
}

var _ snapshot.Lister = (*fakeLister)(nil)

func newFakeLister(objs ...any) *fakeLister {
	l := &fakeLister{
		sets:    map[string]*appsv1.StatefulSet{},
		volumes: map[string]*corev1.PersistentVolume{},
		classes: map[string]*storagev1.StorageClass{},
	}
	for _, o := range objs {
		l.add(o)
	}
	return l
}

func (l *fakeLister) add(o any) {
	switch o := o.(type) {
	case *appsv1.StatefulSet:
		l.sets[o.Namespace+"/"+o.Name] = o
	case *corev1.Pod:
		l.pods = append(l.pods, o)
	case *corev1.PersistentVolumeClaim:
		l.claims = append(l.claims, o)
	case *corev1.PersistentVolume:
		l.volumes[o.Name] = o
	case *storagev1.StorageClass:
		l.classes[o.Name] = o
	case *unstructured.Unstructured:
		l.updates = append(l.updates, o)
	default:
		panic(fmt.Sprintf("fakeLister: unsupported object %T", o))
	}
}

func notFound(resource, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

// GetObject serves the kinds the fake holds through their typed methods.
func (l *fakeLister) GetObject(kind, namespace, name string) (runtime.Object, error) {
	var obj runtime.Object
	var err error
	switch kind {
	case abi.KindPersistentVolume:
		obj, err = l.GetVolume(name)
	case abi.KindPersistentVolumeClaim:
		obj, err = l.GetClaim(namespace, name)
	case abi.KindStorageClass:
		obj, err = l.GetStorageClass(name)
	default:
		return nil, notFound(kind, name)
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

func (l *fakeLister) GetStatefulSet(namespace, name string) (*appsv1.StatefulSet, error) {
	l.gets++
	if l.err != nil {
		return nil, l.err
	}
	if s, ok := l.sets[namespace+"/"+name]; ok {
		return s, nil
	}
	return nil, notFound("statefulsets", name)
}

func (l *fakeLister) ListControlledPods(namespace string, controller types.UID) ([]*corev1.Pod, error) {
	if l.err != nil {
		return nil, l.err
	}
	var out []*corev1.Pod
	for _, p := range l.pods {
		if ref := metav1.GetControllerOfNoCopy(p); p.Namespace == namespace && ref != nil && ref.UID == controller {
			out = append(out, p)
		}
	}
	return out, nil
}

func (l *fakeLister) GetClaim(namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	if l.err != nil {
		return nil, l.err
	}
	for _, c := range l.claims {
		if c.Namespace == namespace && c.Name == name {
			return c, nil
		}
	}
	return nil, notFound("persistentvolumeclaims", name)
}

func (l *fakeLister) ListClaimsNamedFor(namespace, set string) ([]*corev1.PersistentVolumeClaim, error) {
	if l.err != nil {
		return nil, l.err
	}
	var out []*corev1.PersistentVolumeClaim
	for _, c := range l.claims {
		if c.Namespace == namespace && slices.Contains(snapshot.SetNamesInClaimName(c.Name), set) {
			out = append(out, c)
		}
	}
	return out, nil
}

func (l *fakeLister) GetVolume(name string) (*corev1.PersistentVolume, error) {
	if l.err != nil {
		return nil, l.err
	}
	if v, ok := l.volumes[name]; ok {
		return v, nil
	}
	return nil, notFound("persistentvolumes", name)
}

func (l *fakeLister) GetStorageClass(name string) (*storagev1.StorageClass, error) {
	if l.err != nil {
		return nil, l.err
	}
	if c, ok := l.classes[name]; ok {
		return c, nil
	}
	return nil, notFound("storageclasses", name)
}

func (l *fakeLister) ListVolumeClaimUpdates(namespace string) ([]*unstructured.Unstructured, error) {
	if l.err != nil {
		return nil, l.err
	}
	var out []*unstructured.Unstructured
	for _, u := range l.updates {
		if u.GetNamespace() == namespace {
			out = append(out, u)
		}
	}
	return out, nil
}
