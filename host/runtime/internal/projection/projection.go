package projection

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/kubeplug/kubeplug/abi"
)

// Projection is a compiled Manifest.Projection: for each kind it lists,
// the fields to keep. The zero of a kind (no entry) keeps its objects
// whole; a nil *Projection keeps everything. It is immutable and safe for
// concurrent use.
type Projection struct {
	// kinds holds, by kind, the node of a pointer to an object and of a
	// list of objects (Apply's two shapes), which share the object's node.
	kinds map[string]shapes
	// scratches holds the *Scratch of narrowings done with (Narrow).
	scratches sync.Pool
}

// shapes are the nodes of the two shapes a request holds objects in; omit
// is set when the module reads none of the kind's objects.
type shapes struct {
	pointer, list *node
	omit          bool
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
	c := &Projection{kinds: map[string]shapes{}}
	for i, o := range p {
		t, ok := wireTypes[o.Kind]
		if !ok {
			return nil, fmt.Errorf("projection[%d]: kind %q has no wire type", i, o.Kind)
		}
		object := newNode(t)
		for _, path := range append(abi.IdentityFields(), o.Fields...) {
			steps, err := abi.ParseFieldPath(path)
			if err == nil {
				err = object.add(steps)
			}
			if err != nil {
				return nil, fmt.Errorf("projection[%d] (%s): field %q: %w", i, o.Kind, path, err)
			}
		}
		c.kinds[o.Kind] = shapes{
			pointer: &node{typ: reflect.PointerTo(t), elem: object},
			list:    &node{typ: reflect.SliceOf(t), elem: object},
			omit:    o.Omit,
		}
	}
	return c, nil
}

// node is what to keep of one value of type typ: all of it (assign copies
// it), or some fields of the struct it is, or of the struct each element of
// the pointer or list it is points to or holds (elem), or some keys of the
// map it is (keys), or the elements of the list it is whose string field
// has one of some values (filter, ABI 1.5).
//
// A call copies through unsafe pointers at offsets computed here, once per
// load, rather than through reflect.Value at every field: measured on the
// 1+100+100 workload, reflect.Value's checks made narrowing cost more than
// encoding the whole request. Every store is typed (assign, or a store of
// an unsafe.Pointer, a slice header or a map), so the garbage collector
// sees each pointer written.
type node struct {
	typ    reflect.Type
	all    bool
	assign func(dst, src unsafe.Pointer)
	fields []field
	elem   *node
	// every says elem applies to every element of a list: a path went
	// through the list without a filter. A list whose paths all filter it
	// keeps only the elements a filter matches.
	every bool
	// rest are the paths below a list that went through it without a
	// filter, which each filter's node keeps too (addFilter).
	rest [][]abi.FieldStep
	// keys are the keys a map keeps, when it keeps only some.
	keys []string
	// filter keeps, of a list, the elements whose field matches a value.
	filter *filter
}

// filter is what a list keeps of the elements whose string field at
// offset (named match) has one of the values: each value's node, which
// keeps that field, the paths below the filter and the list's rest.
type filter struct {
	match  string
	offset uintptr
	values []filterValue
}

// filterValue is a value of a filter and what it keeps of the elements
// that have it.
type filterValue struct {
	value string
	node  *node
}

// field is one struct field to keep: its offset and what to keep of it.
type field struct {
	index  int
	offset uintptr
	node   *node
}

// newNode returns the node of a value of type t that keeps nothing yet.
func newNode(t reflect.Type) *node {
	n := &node{typ: t}
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		n.elem = newNode(t.Elem())
	}
	return n
}

// add marks the field path steps under n as kept. abi's Manifest.Validate
// has checked them against abi's tables; the errors here are for a
// projection that skipped it, and keep the copy from going wrong.
func (n *node) add(steps []abi.FieldStep) error {
	if n.all {
		return nil
	}
	if len(steps) == 0 {
		n.all, n.fields, n.elem, n.rest, n.keys, n.filter, n.assign = true, nil, nil, nil, nil, nil, assignOf(n.typ)
		return nil
	}
	switch n.typ.Kind() {
	case reflect.Pointer:
		return n.elem.add(steps)
	case reflect.Slice:
		n.every = true
		n.rest = append(n.rest, steps)
		if n.filter != nil {
			for _, v := range n.filter.values {
				if err := v.node.add(steps); err != nil {
					return err
				}
			}
		}
		return n.elem.add(steps)
	case reflect.Struct:
	default:
		return fmt.Errorf("%s has no fields", n.typ)
	}
	step, t := steps[0], n.typ
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == step.Name {
			var child *node
			for _, f := range n.fields {
				if f.index == i {
					child = f.node
				}
			}
			if child == nil {
				child = newNode(t.Field(i).Type)
				n.fields = append(n.fields, field{index: i, offset: t.Field(i).Offset, node: child})
			}
			switch {
			case step.Key != "":
				return child.addKey(step.Key, steps[1:])
			case step.Match != "":
				return child.addFilter(step.Match, step.Value, steps[1:])
			}
			return child.add(steps[1:])
		}
	}
	return fmt.Errorf("%s has no field %q", t, step.Name)
}

// addKey marks key of the map n as kept.
func (n *node) addKey(key string, below []abi.FieldStep) error {
	switch {
	case n.typ != reflect.TypeFor[map[string]string]():
		return fmt.Errorf("%s is not a map of strings: it has no key %q", n.typ, key)
	case len(below) > 0:
		return fmt.Errorf("key %q holds a string: %q is not under it", key, below[0].Name)
	case n.all || slices.Contains(n.keys, key):
		return nil
	}
	n.keys = append(n.keys, key)
	return nil
}

// addFilter marks the path below under the elements of the list n whose
// field match is value as kept, with that field.
func (n *node) addFilter(match, value string, below []abi.FieldStep) error {
	if n.all {
		return nil
	}
	if n.typ.Kind() != reflect.Slice || n.typ.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("%s is not a list of objects: it has no elements to filter", n.typ)
	}
	if n.filter == nil {
		f, ok := stringField(n.typ.Elem(), match)
		if !ok {
			return fmt.Errorf("%s has no string field %q to filter on", n.typ.Elem(), match)
		}
		n.filter = &filter{match: match, offset: f.Offset}
	}
	if n.filter.match != match {
		return fmt.Errorf("the list is filtered on %q already, not on %q", n.filter.match, match)
	}
	var v *node
	for _, x := range n.filter.values {
		if x.value == value {
			v = x.node
		}
	}
	if v == nil {
		v = newNode(n.typ.Elem())
		for _, steps := range append([][]abi.FieldStep{{{Name: match}}}, n.rest...) {
			if err := v.add(steps); err != nil {
				return err
			}
		}
		n.filter.values = append(n.filter.values, filterValue{value, v})
	}
	return v.add(below)
}

// stringField is the field of struct t whose JSON name is name, when it is
// a string.
func stringField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if json, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); json == name {
			return t.Field(i), t.Field(i).Type.Kind() == reflect.String
		}
	}
	return reflect.StructField{}, false
}

// sliceHeader is the layout of a slice value.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// copy sets *dst to what n keeps of *src. *dst is a zero value or what n
// copied into it before: the objects, lists and maps it points to are then
// reused (Narrow), and its fields n does not keep are zero already, since
// nothing but n writes memory n allocated. (A filtered list is the
// exception: an element may be kept by another value's node than last
// time, so copyFiltered zeroes what it reuses.)
func (n *node) copy(dst, src unsafe.Pointer) {
	switch {
	case n.all:
		n.assign(dst, src)
	case n.keys != nil:
		n.copyKeys((*map[string]string)(dst), *(*map[string]string)(src))
	case n.filter != nil:
		n.copyFiltered((*sliceHeader)(dst), (*sliceHeader)(src))
	case n.typ.Kind() == reflect.Struct:
		for _, f := range n.fields {
			f.node.copy(unsafe.Add(dst, f.offset), unsafe.Add(src, f.offset))
		}
	case n.typ.Kind() == reflect.Pointer:
		from := *(*unsafe.Pointer)(src)
		if from == nil {
			*(*unsafe.Pointer)(dst) = nil
			return
		}
		to := *(*unsafe.Pointer)(dst)
		if to == nil {
			to = reflect.New(n.elem.typ).UnsafePointer()
			*(*unsafe.Pointer)(dst) = to
		}
		n.elem.copy(to, from)
	case n.typ.Kind() == reflect.Slice:
		from, to := (*sliceHeader)(src), (*sliceHeader)(dst)
		if from.data == nil {
			n.clearTail(to, 0)
			*to = sliceHeader{}
			return
		}
		if to.data == nil || to.cap < from.len {
			*to = sliceHeader{reflect.MakeSlice(n.typ, from.len, from.len).UnsafePointer(), 0, from.len}
		}
		n.clearTail(to, from.len)
		size := n.elem.typ.Size()
		for i := range from.len {
			n.elem.copy(unsafe.Add(to.data, uintptr(i)*size), unsafe.Add(from.data, uintptr(i)*size))
		}
		to.len = from.len
	}
}

// copyKeys sets *dst to the keys n keeps that src has: a map of the
// projection's own (never src, which the cache's object shares), nil when
// src has none of them, as a map with no keys is sent.
func (n *node) copyKeys(dst *map[string]string, src map[string]string) {
	m := *dst
	clear(m)
	put := func(k, v string) {
		if m == nil {
			m = make(map[string]string, len(n.keys))
		}
		m[k] = v
	}
	if len(src) < len(n.keys) {
		// Fewer entries than keys (a PV with its one annotation, asked
		// for five): comparing each entry's key costs less than hashing
		// every key kept.
		for k, v := range src {
			if slices.Contains(n.keys, k) {
				put(k, v)
			}
		}
	} else {
		for _, k := range n.keys {
			if v, ok := src[k]; ok {
				put(k, v)
			}
		}
	}
	if len(m) == 0 {
		m = nil
	}
	*dst = m
}

// copyFiltered sets *to to the elements of the list *from that n keeps,
// in their order: with an unfiltered path, all of them; otherwise those a
// filter matches, nil when none does.
func (n *node) copyFiltered(to, from *sliceHeader) {
	size := n.elem.typ.Size()
	kept := 0
	for i := range from.len {
		if n.keeps(unsafe.Add(from.data, uintptr(i)*size)) != nil {
			kept++
		}
	}
	n.clearTail(to, 0)
	if kept == 0 {
		*to = sliceHeader{}
		return
	}
	if to.data == nil || to.cap < kept {
		*to = sliceHeader{reflect.MakeSlice(n.typ, kept, kept).UnsafePointer(), 0, kept}
	}
	j := 0
	for i := range from.len {
		src := unsafe.Add(from.data, uintptr(i)*size)
		if e := n.keeps(src); e != nil {
			e.copy(unsafe.Add(to.data, uintptr(j)*size), src)
			j++
		}
	}
	to.len = kept
}

// keeps returns the node of what the filtered list n keeps of its element
// at p, nil when it drops it.
func (n *node) keeps(p unsafe.Pointer) *node {
	got := *(*string)(unsafe.Add(p, n.filter.offset))
	for _, v := range n.filter.values {
		if v.value == got {
			return v.node
		}
	}
	if n.every {
		return n.elem
	}
	return nil
}

// clearTail zeroes the elements of the list s, of n's type, from index
// keep to its length, so that a reused list does not keep an earlier
// request's objects alive.
func (n *node) clearTail(s *sliceHeader, keep int) {
	size := n.elem.typ.Size()
	for i := keep; i < s.len; i++ {
		reflect.NewAt(n.elem.typ, unsafe.Add(s.data, uintptr(i)*size)).Elem().SetZero()
	}
}

// assignOf returns a typed assignment of a value of type t: direct for the
// wire types' common field types, through reflect for the others.
func assignOf(t reflect.Type) func(dst, src unsafe.Pointer) {
	switch t {
	case reflect.TypeFor[string]():
		return func(dst, src unsafe.Pointer) { *(*string)(dst) = *(*string)(src) }
	case reflect.TypeFor[map[string]string]():
		return func(dst, src unsafe.Pointer) { *(*map[string]string)(dst) = *(*map[string]string)(src) }
	case reflect.TypeFor[[]string]():
		return func(dst, src unsafe.Pointer) { *(*[]string)(dst) = *(*[]string)(src) }
	case reflect.TypeFor[int32]():
		return func(dst, src unsafe.Pointer) { *(*int32)(dst) = *(*int32)(src) }
	case reflect.TypeFor[int64]():
		return func(dst, src unsafe.Pointer) { *(*int64)(dst) = *(*int64)(src) }
	case reflect.TypeFor[bool]():
		return func(dst, src unsafe.Pointer) { *(*bool)(dst) = *(*bool)(src) }
	}
	return func(dst, src unsafe.Pointer) { reflect.NewAt(t, dst).Elem().Set(reflect.NewAt(t, src).Elem()) }
}

// keepOne sets *dst to what the projection keeps of src, an object of
// kind. *dst is what keepOne set it to before, with the same p and kind, or
// nil: a kind p does not list always shares the caller's object, and one it
// lists always points to memory of the projection's own.
func keepOne[T any](p *Projection, kind string, dst **T, src *T) {
	s, ok := p.kinds[kind]
	switch {
	case !ok:
		*dst = src
	case s.omit || src == nil:
		*dst = nil
	default:
		if *dst == nil {
			*dst = new(T)
		}
		s.pointer.elem.copy(unsafe.Pointer(*dst), unsafe.Pointer(src))
	}
}

// keepList sets *dst to what the projection keeps of src, objects of
// kind, under keepOne's rules.
func keepList[T any](p *Projection, kind string, dst *[]T, src []T) {
	s, ok := p.kinds[kind]
	switch {
	case !ok:
		*dst = src
	case s.omit:
		*dst = nil
	default:
		s.list.copy(unsafe.Pointer(dst), unsafe.Pointer(&src))
	}
}

// Apply returns the request a module with projection p is sent: req itself
// when p is nil, else a copy whose objects carry only what p keeps. req is
// not changed, and the copy shares what it keeps (strings, maps, lists)
// with req: treat both as read-only.
func (p *Projection) Apply(req *abi.ReconcileRequest) *abi.ReconcileRequest {
	if p == nil || req == nil {
		return req
	}
	return p.into(new(Scratch), req)
}

// Scratch is the memory of one narrowing (Narrow): the narrowed request and
// every object and list of it that the projection made.
type Scratch struct {
	req    abi.ReconcileRequest
	set    abi.StatefulSetSubject
	volume abi.PersistentVolumeSubject
	pool   *sync.Pool
}

// Narrow is Apply into memory an earlier narrowing with p used: a call of
// a module sends each request narrowed once and then drops it, and
// allocating every narrowed object and list again cost more than encoding
// them (BENCHMARKS.md, "Issue 26: retention and reclaim"). Call the
// Scratch's Done once the narrowed request is no longer read; it must not be
// read after that.
func (p *Projection) Narrow(req *abi.ReconcileRequest) (*abi.ReconcileRequest, *Scratch) {
	if p == nil || req == nil {
		return req, nil
	}
	s, _ := p.scratches.Get().(*Scratch)
	if s == nil {
		s = &Scratch{pool: &p.scratches}
	}
	return p.into(s, req), s
}

// Done gives s back for another narrowing with its projection. A nil s
// (Narrow's with no projection) is fine.
func (s *Scratch) Done() {
	if s != nil && s.pool != nil {
		s.pool.Put(s)
	}
}

// into narrows req into s, which is new or was last used by into with p.
func (p *Projection) into(s *Scratch, req *abi.ReconcileRequest) *abi.ReconcileRequest {
	s.req = *req
	if src := req.StatefulSet; src != nil {
		c := &s.set
		keepOne(p, abi.KindStatefulSet, &c.Set, src.Set)
		keepList(p, abi.KindPod, &c.Pods, src.Pods)
		keepList(p, abi.KindPersistentVolumeClaim, &c.Claims, src.Claims)
		keepList(p, abi.KindStorageClass, &c.StorageClasses, src.StorageClasses)
		keepOne(p, abi.KindVolumeClaimUpdate, &c.ClaimUpdate, src.ClaimUpdate)
		keepList(p, abi.KindVolumeClaimUpdate, &c.OtherClaimUpdates, src.OtherClaimUpdates)
		s.req.StatefulSet = c
	}
	if src := req.PersistentVolume; src != nil {
		c := &s.volume
		c.Drivers = src.Drivers
		keepOne(p, abi.KindPersistentVolume, &c.Volume, src.Volume)
		keepOne(p, abi.KindPersistentVolumeClaim, &c.Claim, src.Claim)
		keepOne(p, abi.KindStorageClass, &c.StorageClass, src.StorageClass)
		s.req.PersistentVolume = c
	}
	return &s.req
}
