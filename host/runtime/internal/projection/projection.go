package projection

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/kubeplug/kubeplug/abi"
)

// Projection is a compiled Manifest.Projection: for each kind it lists,
// the fields to keep. The zero of a kind (no entry) keeps its objects
// whole; a nil *Projection keeps everything. It is immutable and safe for
// concurrent use.
type Projection struct {
	kinds map[string]*node
}

// node is what to keep of one value: all of it, or some fields of the
// struct it is (or points to, or holds a list of).
type node struct {
	all    bool
	fields []field
}

// field is one struct field to keep, by index, and what to keep of it.
type field struct {
	index int
	name  string
	node  *node
}

// wireTypes are the wire types of the kinds a projection may name.
var wireTypes = map[string]reflect.Type{
	abi.KindStatefulSet:           reflect.TypeFor[abi.StatefulSet](),
	abi.KindPod:                   reflect.TypeFor[abi.Pod](),
	abi.KindPersistentVolumeClaim: reflect.TypeFor[abi.PersistentVolumeClaim](),
	abi.KindPersistentVolume:      reflect.TypeFor[abi.PersistentVolume](),
	abi.KindStorageClass:          reflect.TypeFor[abi.StorageClass](),
	abi.KindVolumeClaimUpdate:     reflect.TypeFor[abi.VolumeClaimUpdate](),
}

// Compile compiles a manifest's projection; nil when it lists nothing.
// The manifest must have passed abi's Manifest.Validate, which bounds it:
// a path that names no field of the wire type is an error here too.
func Compile(p []abi.ObjectFields) (*Projection, error) {
	if len(p) == 0 {
		return nil, nil
	}
	c := &Projection{kinds: map[string]*node{}}
	for i, o := range p {
		t, ok := wireTypes[o.Kind]
		if !ok {
			return nil, fmt.Errorf("projection[%d]: kind %q has no wire type", i, o.Kind)
		}
		root := &node{}
		for _, path := range append(abi.IdentityFields(), o.Fields...) {
			if err := root.add(t, strings.Split(path, ".")); err != nil {
				return nil, fmt.Errorf("projection[%d] (%s): field %q: %w", i, o.Kind, path, err)
			}
		}
		c.kinds[o.Kind] = root
	}
	return c, nil
}

// add marks the field path steps of a value of type t as kept.
func (n *node) add(t reflect.Type, steps []string) error {
	if n.all {
		return nil
	}
	if len(steps) == 0 {
		n.all, n.fields = true, nil
		return nil
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return fmt.Errorf("%s has no fields", t)
	}
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == steps[0] {
			for _, f := range n.fields {
				if f.index == i {
					return f.node.add(t.Field(i).Type, steps[1:])
				}
			}
			child := &node{}
			n.fields = append(n.fields, field{index: i, name: name, node: child})
			return child.add(t.Field(i).Type, steps[1:])
		}
	}
	return fmt.Errorf("%s has no field %q", t, steps[0])
}

// copy sets dst, a zero value, to what n keeps of src.
func (n *node) copy(dst, src reflect.Value) {
	if n.all {
		dst.Set(src)
		return
	}
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		n.copy(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			n.copy(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Struct:
		for _, f := range n.fields {
			f.node.copy(dst.Field(f.index), src.Field(f.index))
		}
	}
}

// keep sets *dst to what the projection keeps of src, an object of kind
// (a pointer to one, or a list of them).
func keep[T any](p *Projection, kind string, dst *T, src T) {
	n, ok := p.kinds[kind]
	if !ok {
		*dst = src
		return
	}
	n.copy(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src))
}

// Apply returns the request a module with projection p is sent: req itself
// when p is nil, else a copy whose objects carry only what p keeps. req is
// not changed, and the copy shares what it keeps (strings, maps, lists)
// with req: treat both as read-only.
func (p *Projection) Apply(req *abi.ReconcileRequest) *abi.ReconcileRequest {
	if p == nil || req == nil {
		return req
	}
	out := *req
	if s := req.StatefulSet; s != nil {
		c := &abi.StatefulSetSubject{}
		keep(p, abi.KindStatefulSet, &c.Set, s.Set)
		keep(p, abi.KindPod, &c.Pods, s.Pods)
		keep(p, abi.KindPersistentVolumeClaim, &c.Claims, s.Claims)
		keep(p, abi.KindStorageClass, &c.StorageClasses, s.StorageClasses)
		keep(p, abi.KindVolumeClaimUpdate, &c.ClaimUpdate, s.ClaimUpdate)
		out.StatefulSet = c
	}
	if s := req.PersistentVolume; s != nil {
		c := &abi.PersistentVolumeSubject{Drivers: s.Drivers}
		keep(p, abi.KindPersistentVolume, &c.Volume, s.Volume)
		keep(p, abi.KindPersistentVolumeClaim, &c.Claim, s.Claim)
		keep(p, abi.KindStorageClass, &c.StorageClass, s.StorageClass)
		out.PersistentVolume = c
	}
	return &out
}
