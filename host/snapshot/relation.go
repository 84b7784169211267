package snapshot

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeplug/kubeplug/abi"
)

// Relation is a declared relation (abi.Relation) compiled against its
// subject: how its objects are read for one subject, and which subjects a
// change of one of them queues. Both come from the declaration as data, the
// way controller-runtime's handlers map an object to requests
// (EnqueueRequestForOwner, EnqueueRequestsFromMapFunc), and both read the
// Lister through the indexes Indexes returns, never a scan of the cluster.
//
// A Lister knows a resource by its kind (Resource.Kind), so a Relation
// needs its subject's and its own resource resolved: Kind and Namespaced
// set, as discovery says them.
type Relation struct {
	decl     abi.Relation // as declared, resolved
	subject  abi.Resource // resolved
	path     []abi.FieldStep
	selector labels.Selector // of an all relation; nil for everything
}

// subjectNamespaced and namespaced are the scopes of the subject and of
// the relation's kind, as resolved.
func (r *Relation) subjectNamespaced() bool { return *r.subject.Namespaced }
func (r *Relation) namespaced() bool        { return *r.decl.Resource.Namespaced }

// CompileRelations compiles the relations of a declaration whose subject
// and relations' resources are resolved. It checks again what abi's
// Validate could check only with the scopes given: a cluster-scoped subject
// has no namespace to select in or to limit an all relation to; and it
// parses each all relation's label selector.
func CompileRelations(subject abi.Resource, rels []abi.Relation) ([]*Relation, error) {
	if err := resolved(subject); err != nil {
		return nil, fmt.Errorf("subject %s %w", subject, err)
	}
	out := make([]*Relation, 0, len(rels))
	for i, d := range rels {
		where := fmt.Sprintf("relation %d (%s)", i, d.Name)
		if err := resolved(d.Resource); err != nil {
			return nil, fmt.Errorf("%s: %s %w", where, d.Resource, err)
		}
		r := &Relation{decl: d, subject: subject}
		switch {
		case d.Type == abi.RelationSelected && !r.subjectNamespaced():
			return nil, fmt.Errorf("%s selects %s in the subject's namespace, but %s are cluster-scoped: use a relation of type all, named or owned", where, d.Resource.Resource, subject.Resource)
		case d.Type == abi.RelationSelected && !r.namespaced():
			return nil, fmt.Errorf("%s selects %s in the subject's namespace, but they are cluster-scoped: use a relation of type all", where, d.Resource.Resource)
		case d.InNamespace && (!r.subjectNamespaced() || !r.namespaced()):
			return nil, fmt.Errorf("%s: inNamespace needs a namespaced subject and namespaced %s: drop it", where, d.Resource.Resource)
		}
		if d.Path != "" {
			steps, err := abi.ParseFieldPath(d.Path)
			if err != nil {
				return nil, fmt.Errorf("%s: path %q: %w", where, d.Path, err)
			}
			r.path = steps
		}
		if d.LabelSelector != "" {
			sel, err := labels.Parse(d.LabelSelector)
			if err != nil {
				return nil, fmt.Errorf("%s: labelSelector %q: %w", where, d.LabelSelector, err)
			}
			r.selector = sel
		}
		out = append(out, r)
	}
	return out, nil
}

func resolved(r abi.Resource) error {
	if r.Kind == "" || r.Namespaced == nil {
		return fmt.Errorf("is not resolved: its kind and scope come from discovery")
	}
	return nil
}

// Name is the relation's name in a request.
func (r *Relation) Name() string { return r.decl.Name }

// Kind is the kind of the relation's objects, as a Lister knows them.
func (r *Relation) Kind() string { return r.decl.Resource.Kind }

// The indexes of declared relations. Each is named after what it files
// and by what, so that the same relation declared by two modules is one
// indexer of the informer they share.
func controlledBy(kind string) Index {
	return Index{Name: "kubeplug.dev/controller-uid", Kind: kind, Keys: controllerUIDKeys}
}

func inNamespace(kind string) Index {
	return Index{Name: "kubeplug.dev/namespace", Kind: kind, Keys: namespaceKeys}
}

func every(kind string) Index {
	return Index{Name: "kubeplug.dev/all", Kind: kind, Keys: func(runtime.Object) ([]string, error) { return []string{""}, nil }}
}

// namedBy files subjects under the "namespace/name" of each object their
// field at path names (namedKeys).
func (r *Relation) namedBy() Index {
	return Index{
		Name: "kubeplug.dev/named:" + abi.JoinFieldPath(r.path) + ":" + schema.GroupResource{Group: r.decl.Resource.Group, Resource: r.decl.Resource.Resource}.String(),
		Kind: r.subject.Kind,
		Keys: func(obj runtime.Object) ([]string, error) { return r.namedKeys(obj), nil },
	}
}

// Indexes returns the indexes r reads by, on its own kind and on the
// subject's: a Lister must keep each (the live host registers them as
// indexers of the kinds' informers).
func (r *Relation) Indexes() []Index {
	switch r.decl.Type {
	case abi.RelationOwned:
		return []Index{controlledBy(r.decl.Resource.Kind)}
	case abi.RelationSelected:
		return []Index{inNamespace(r.decl.Resource.Kind), inNamespace(r.subject.Kind)}
	case abi.RelationNamed:
		return []Index{r.namedBy()}
	case abi.RelationAll:
		return []Index{r.allIndex(r.decl.Resource.Kind), r.allIndex(r.subject.Kind)}
	}
	return nil
}

// allIndex is how an all relation lists a kind: by namespace when it is
// limited to the subject's, else whole.
func (r *Relation) allIndex(kind string) Index {
	if r.decl.InNamespace {
		return inNamespace(kind)
	}
	return every(kind)
}

// Objects returns the relation's objects for subject, sorted by namespace
// and name, at most abi.MaxRelatedObjects: more is an error that says so,
// not a request cut short.
func (r *Relation) Objects(l Lister, subject runtime.Object) ([]runtime.Object, error) {
	s, err := meta.Accessor(subject)
	if err != nil {
		return nil, fmt.Errorf("relation %s: %w", r.decl.Name, err)
	}
	var objs []runtime.Object
	switch r.decl.Type {
	case abi.RelationOwned:
		objs, err = l.ByIndex(controlledBy(r.decl.Resource.Kind), string(s.GetUID()))
		// The reference must also name the subject's group and kind, as
		// the garbage collector checks; and an owner reference names an
		// owner in the dependent's own namespace: one elsewhere does not
		// point at this subject.
		objs = slices.DeleteFunc(objs, func(o runtime.Object) bool {
			return !r.controls(o) || r.subjectNamespaced() && namespaceOf(o) != s.GetNamespace()
		})
	case abi.RelationSelected:
		sel := r.selectorOf(subject)
		if sel == nil {
			return nil, nil
		}
		objs, err = l.ByIndex(inNamespace(r.decl.Resource.Kind), s.GetNamespace())
		if err == nil {
			objs = slices.DeleteFunc(objs, func(o runtime.Object) bool { return !sel.Matches(labels.Set(labelsOf(o))) })
		}
	case abi.RelationNamed:
		objs, err = r.named(l, subject)
	case abi.RelationAll:
		key := ""
		if r.decl.InNamespace {
			key = s.GetNamespace()
		}
		objs, err = l.ByIndex(r.allIndex(r.decl.Resource.Kind), key)
		if err == nil && r.selector != nil {
			objs = slices.DeleteFunc(objs, func(o runtime.Object) bool { return !r.selector.Matches(labels.Set(labelsOf(o))) })
		}
	}
	if err != nil {
		return nil, fmt.Errorf("relation %s of %s/%s: %w", r.decl.Name, s.GetNamespace(), s.GetName(), err)
	}
	if len(objs) > abi.MaxRelatedObjects {
		return nil, fmt.Errorf("relation %s of %s %s/%s holds %d %s, more than %d: narrow it (a selector, inNamespace, a relation of another type)", r.decl.Name, r.subject.Kind, s.GetNamespace(), s.GetName(), len(objs), r.decl.Resource.Resource, abi.MaxRelatedObjects)
	}
	slices.SortFunc(objs, func(a, b runtime.Object) int {
		return cmp.Or(cmp.Compare(namespaceOf(a), namespaceOf(b)), cmp.Compare(nameOf(a), nameOf(b)))
	})
	return objs, nil
}

// named reads the objects subject's field at r.path names, each once: at
// most abi.MaxRelatedObjects names, so that a subject listing a hundred
// thousand names costs one error, not as many reads.
func (r *Relation) named(l Lister, subject runtime.Object) ([]runtime.Object, error) {
	keys := r.namedKeys(subject)
	if len(keys) > abi.MaxRelatedObjects {
		return nil, fmt.Errorf("its path %s names more than %d %s: narrow it", abi.JoinFieldPath(r.path), abi.MaxRelatedObjects, r.decl.Resource.Resource)
	}
	var out []runtime.Object
	for _, key := range keys {
		ns, name, ok := strings.Cut(key, "/")
		if !ok {
			ns, name = "", key
		}
		o, err := l.GetObject(r.decl.Resource.Kind, ns, name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// SubjectKeys returns the keys of the subjects whose relation r holds obj,
// an object of r's kind: what a change of obj queues. It is a KeysFunc.
func (r *Relation) SubjectKeys(obj any, l Lister) ([]string, error) {
	o, ok := obj.(runtime.Object)
	if !ok {
		return nil, nil
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return nil, nil
	}
	switch r.decl.Type {
	case abi.RelationOwned:
		if !r.controls(o) {
			return nil, nil
		}
		ref := metav1.GetControllerOfNoCopy(m)
		if r.subjectNamespaced() {
			return []string{Key(m.GetNamespace(), ref.Name)}, nil
		}
		return []string{ref.Name}, nil
	case abi.RelationSelected:
		subjects, err := l.ByIndex(inNamespace(r.subject.Kind), m.GetNamespace())
		if err != nil {
			return nil, err
		}
		set := labels.Set(m.GetLabels())
		var keys []string
		for _, s := range subjects {
			if sel := r.selectorOf(s); sel != nil && sel.Matches(set) {
				keys = append(keys, subjectKey(s, r.subjectNamespaced()))
			}
		}
		return keys, nil
	case abi.RelationNamed:
		subjects, err := l.ByIndex(r.namedBy(), Key(m.GetNamespace(), m.GetName()))
		if err != nil {
			return nil, err
		}
		return keysOfObjects(subjects, r.subjectNamespaced()), nil
	case abi.RelationAll:
		if r.selector != nil && !r.selector.Matches(labels.Set(m.GetLabels())) {
			return nil, nil
		}
		key := ""
		if r.decl.InNamespace {
			key = m.GetNamespace()
		}
		subjects, err := l.ByIndex(r.allIndex(r.subject.Kind), key)
		if err != nil {
			return nil, err
		}
		return keysOfObjects(subjects, r.subjectNamespaced()), nil
	}
	return nil, nil
}

// controls reports whether o's controller reference names an object of
// r's subject kind and group.
func (r *Relation) controls(o runtime.Object) bool {
	m, err := meta.Accessor(o)
	if err != nil {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil || ref.Kind != r.subject.Kind {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == r.subject.Group
}

// selectorOf reads the label selector at r.path of subject: a
// metav1.LabelSelector (matchLabels, matchExpressions), or a map of labels
// (a Service's spec.selector). An absent, empty or invalid selector is nil:
// it selects nothing, so that a subject without one never relates to
// every object of its namespace.
func (r *Relation) selectorOf(subject runtime.Object) labels.Selector {
	vals := fieldValues(contentOf(subject), r.path)
	if len(vals) != 1 {
		return nil
	}
	m, ok := vals[0].(map[string]any)
	if !ok || len(m) == 0 {
		return nil
	}
	_, hasLabels := m["matchLabels"]
	_, hasExpressions := m["matchExpressions"]
	if hasLabels || hasExpressions {
		var ls metav1.LabelSelector
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
			return nil
		}
		if len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0 {
			return nil
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return nil
		}
		return sel
	}
	set := labels.Set{}
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		set[k] = s
	}
	sel, err := labels.ValidatedSelectorFromSet(set)
	if err != nil {
		return nil
	}
	return sel
}

// namedKeys returns the "namespace/name" (or "name") of every object
// subject's field at r.path names: a string is a name, in the subject's
// namespace when r's kind is namespaced; an object's "name" and
// "namespace" fields are a reference. A namespaced object named by a
// cluster-scoped subject without a namespace names nothing.
func (r *Relation) namedKeys(subject runtime.Object) []string {
	m, err := meta.Accessor(subject)
	if err != nil {
		return nil
	}
	var keys []string
	seen := map[string]bool{}
	for _, v := range fieldValues(contentOf(subject), r.path) {
		if len(keys) > abi.MaxRelatedObjects {
			// More names than a relation may bring: named fails the
			// build, and the index holds no more than that proves.
			break
		}
		var ns, name string
		switch v := v.(type) {
		case string:
			name = v
		case map[string]any:
			name, _ = v["name"].(string)
			ns, _ = v["namespace"].(string)
		}
		switch {
		case name == "":
			continue
		case !r.namespaced():
			ns = ""
		case ns == "" && r.subjectNamespaced():
			ns = m.GetNamespace()
		case ns == "":
			continue
		}
		key := name
		if r.namespaced() {
			key = Key(ns, name)
		}
		if !seen[key] {
			seen[key] = true
			keys = append(keys, key)
		}
	}
	return keys
}

// fieldValues returns the values at path in obj, through lists: every
// element's.
func fieldValues(obj map[string]any, path []abi.FieldStep) []any {
	vals := []any{obj}
	for _, step := range path {
		var next []any
		for _, v := range vals {
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			switch f := m[step.Name].(type) {
			case nil:
			case []any:
				next = append(next, f...)
			default:
				next = append(next, f)
			}
		}
		vals = next
	}
	return vals
}

// contentOf returns obj's fields as a map: an unstructured object's own
// (read, never written), a typed object's converted.
func contentOf(obj runtime.Object) map[string]any {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	return m
}

func controllerUIDKeys(obj runtime.Object) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

func namespaceKeys(obj runtime.Object) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	return []string{m.GetNamespace()}, nil
}

func labelsOf(o runtime.Object) map[string]string {
	if m, err := meta.Accessor(o); err == nil {
		return m.GetLabels()
	}
	return nil
}

func namespaceOf(o runtime.Object) string {
	if m, err := meta.Accessor(o); err == nil {
		return m.GetNamespace()
	}
	return ""
}

func nameOf(o runtime.Object) string {
	if m, err := meta.Accessor(o); err == nil {
		return m.GetName()
	}
	return ""
}

func subjectKey(o runtime.Object, namespaced bool) string {
	if namespaced {
		return Key(namespaceOf(o), nameOf(o))
	}
	return nameOf(o)
}

func keysOfObjects(objs []runtime.Object, namespaced bool) []string {
	var keys []string
	for _, o := range objs {
		keys = append(keys, subjectKey(o, namespaced))
	}
	return keys
}
