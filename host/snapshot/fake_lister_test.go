package snapshot_test

import (
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// fakeLister is a snapshot.Lister over a list of objects, answering an
// index by running its Keys over them: it returns objects in insertion
// order, so tests can check that the builder sorts.
type fakeLister struct {
	objs []runtime.Object
	// err, when set, is returned by every method.
	err error
	// gets counts reads of StatefulSets.
	gets int
}

var _ snapshot.Lister = (*fakeLister)(nil)

func newFakeLister(objs ...runtime.Object) *fakeLister { return &fakeLister{objs: objs} }

func (l *fakeLister) add(o runtime.Object) { l.objs = append(l.objs, o) }

// kindOf names o's kind: an unstructured object's own, or its Go type's
// (typed objects made in Go carry no TypeMeta).
func kindOf(o runtime.Object) string {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u.GetKind()
	}
	return reflect.TypeOf(o).Elem().Name()
}

func (l *fakeLister) GetObject(kind, namespace, name string) (runtime.Object, error) {
	if kind == abi.KindStatefulSet {
		l.gets++
	}
	if l.err != nil {
		return nil, l.err
	}
	for _, o := range l.objs {
		m, err := meta.Accessor(o)
		if err != nil {
			return nil, err
		}
		if kindOf(o) == kind && m.GetNamespace() == namespace && m.GetName() == name {
			return o, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: abi.KindOf(kind).Resource}, name)
}

func (l *fakeLister) ByIndex(idx snapshot.Index, key string) ([]runtime.Object, error) {
	if l.err != nil {
		return nil, l.err
	}
	var out []runtime.Object
	for _, o := range l.objs {
		if kindOf(o) != idx.Kind {
			continue
		}
		keys, err := idx.Keys(o)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			if k == key {
				out = append(out, o)
				break
			}
		}
	}
	return out, nil
}
