package snapshot

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeplug/kubeplug/abi"
)

// Declaration is a module's Watches resolved (kube.ResolveWatches) and
// compiled: what the input of one of its subjects is built from, and what
// a change of a related object queues. It is the one description of a
// declared subject the host's caches, controller and `kubeplug test` read.
type Declaration struct {
	subject   abi.Resource
	relations []*Relation
}

// CompileDeclaration compiles w, whose resources are resolved.
func CompileDeclaration(w *abi.Watches) (*Declaration, error) {
	rels, err := CompileRelations(w.Subject, w.Relations)
	if err != nil {
		return nil, err
	}
	return &Declaration{subject: w.Subject, relations: rels}, nil
}

// Subject is the subject's resource, resolved.
func (d *Declaration) Subject() abi.Resource { return d.subject }

// Namespaced reports whether subjects live in namespaces.
func (d *Declaration) Namespaced() bool { return *d.subject.Namespaced }

// Kinds returns the kinds the declaration reads, the subject's first, each
// once, with their resources: what the host must watch for it.
func (d *Declaration) Kinds() []abi.Resource {
	out := []abi.Resource{d.subject}
	seen := map[string]bool{d.subject.Kind: true}
	for _, r := range d.relations {
		if !seen[r.decl.Resource.Kind] {
			seen[r.decl.Resource.Kind] = true
			out = append(out, r.decl.Resource)
		}
	}
	return out
}

// Indexes returns every index the declaration reads by, each once: a
// Lister serving it must keep them.
func (d *Declaration) Indexes() []Index {
	var out []Index
	seen := map[[2]string]bool{}
	for _, r := range d.relations {
		for _, idx := range r.Indexes() {
			if k := [2]string{idx.Kind, idx.Name}; !seen[k] {
				seen[k] = true
				out = append(out, idx)
			}
		}
	}
	return out
}

// RelatedKeys returns, by kind, what a change of an object of each related
// kind queues: the subjects of every relation of that kind, each key once.
func (d *Declaration) RelatedKeys() map[string]KeysFunc {
	byKind := map[string][]*Relation{}
	for _, r := range d.relations {
		byKind[r.decl.Resource.Kind] = append(byKind[r.decl.Resource.Kind], r)
	}
	out := make(map[string]KeysFunc, len(byKind))
	for kind, rels := range byKind {
		out[kind] = func(obj any, l Lister) ([]string, error) {
			var keys []string
			for _, r := range rels {
				ks, err := r.SubjectKeys(obj, l)
				if err != nil {
					return keys, err
				}
				for _, k := range ks {
					if !slices.Contains(keys, k) {
						keys = append(keys, k)
					}
				}
			}
			return keys, nil
		}
	}
	return out
}

// Declared builds the input of a declared module for the subject named by
// key ("namespace/name", or "name" for a cluster-scoped subject): the
// subject and each relation's objects (Relation.Objects), every one whole,
// as JSON. It returns (nil, nil) when the subject does not exist.
func (b *Builder) Declared(d *Declaration, key string, config []byte) (*abi.ReconcileRequest, error) {
	ns, name, err := splitSubjectKey(key, d.Namespaced())
	if err != nil {
		return nil, err
	}
	subject, err := b.Lister.GetObject(d.subject.Kind, ns, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", d.subject.Resource, key, err)
	}
	obj, err := genericObject(d.subject, subject)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", d.subject.Resource, key, err)
	}
	in := &abi.DeclaredSubject{Object: &obj, Related: make([]abi.RelatedObjects, len(d.relations))}
	size := len(obj.Object)
	for i, r := range d.relations {
		objs, err := r.Objects(b.Lister, subject)
		if err != nil {
			return nil, err
		}
		in.Related[i] = abi.RelatedObjects{Relation: r.decl.Name, Objects: make([]abi.GenericObject, len(objs))}
		for j, o := range objs {
			g := &in.Related[i].Objects[j]
			if *g, err = genericObject(r.decl.Resource, o); err != nil {
				return nil, fmt.Errorf("relation %s of %s %s: %w", r.decl.Name, d.subject.Resource, key, err)
			}
			// Checked as the request grows: it stops at the first object
			// past the budget, not once all of them are encoded.
			if size += len(g.Object); size > abi.MaxDeclaredRequestBytes {
				return nil, fmt.Errorf("the input of %s %s is more than %d bytes of objects by relation %s (at %s/%s): narrow the relations that bring large objects",
					d.subject.Resource, key, abi.MaxDeclaredRequestBytes, r.decl.Name, g.Metadata.Namespace, g.Metadata.Name)
			}
		}
	}
	return &abi.ReconcileRequest{Key: key, Now: b.now(), Config: config, Declared: in}, nil
}

// splitSubjectKey reads a subject's key: "namespace/name" for a namespaced
// subject, "name" for a cluster-scoped one.
func splitSubjectKey(key string, namespaced bool) (ns, name string, err error) {
	if !namespaced {
		if key == "" || strings.Contains(key, "/") {
			return "", "", fmt.Errorf("%w %q: a cluster-scoped subject's key is its name", ErrBadKey, key)
		}
		return "", key, nil
	}
	ns, name, ok := strings.Cut(key, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%w %q: a namespaced subject's key is \"namespace/name\"", ErrBadKey, key)
	}
	return ns, name, nil
}

// genericObject is obj, of resource r, as a request carries it: its kind
// and metadata decoded, and all of it as JSON with its apiVersion and kind
// (which a typed cache object has lost) and without metadata.managedFields.
func genericObject(r abi.Resource, obj runtime.Object) (abi.GenericObject, error) {
	var content map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		content = u.Object
	} else {
		var err error
		if content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return abi.GenericObject{}, err
		}
	}
	apiVersion := schema.GroupVersion{Group: r.Group, Version: r.Version}.String()
	if m, ok := content["metadata"].(map[string]any); ok && m["managedFields"] != nil || content["apiVersion"] != apiVersion || content["kind"] != r.Kind {
		// A shallow copy: the cache's object is not ours to change.
		c := make(map[string]any, len(content)+2)
		for k, v := range content {
			c[k] = v
		}
		if m, ok := c["metadata"].(map[string]any); ok && m["managedFields"] != nil {
			mc := make(map[string]any, len(m))
			for k, v := range m {
				if k != "managedFields" {
					mc[k] = v
				}
			}
			c["metadata"] = mc
		}
		c["apiVersion"], c["kind"] = apiVersion, r.Kind
		content = c
	}
	raw, err := json.Marshal(content)
	if err != nil {
		return abi.GenericObject{}, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return abi.GenericObject{}, err
	}
	out := abi.GenericObject{APIVersion: apiVersion, Kind: r.Kind, Object: raw}
	genericMeta(&out.Metadata, m)
	return out, nil
}

// genericMeta fills dst from m, an object of any form.
func genericMeta(dst *abi.ObjectMeta, m metav1.Object) {
	dst.Name = m.GetName()
	dst.Namespace = m.GetNamespace()
	dst.UID = string(m.GetUID())
	dst.ResourceVersion = m.GetResourceVersion()
	dst.Generation = m.GetGeneration()
	dst.Labels = m.GetLabels()
	dst.Annotations = m.GetAnnotations()
	dst.Finalizers = m.GetFinalizers()
	dst.CreationTimestamp = formatTime(m.GetCreationTimestamp())
	if t := m.GetDeletionTimestamp(); t != nil {
		dst.DeletionTimestamp = formatTime(*t)
	}
	for _, r := range m.GetOwnerReferences() {
		dst.OwnerReferences = append(dst.OwnerReferences, abi.OwnerReference{
			APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: string(r.UID),
			Controller: r.Controller != nil && *r.Controller, BlockOwnerDeletion: r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion,
		})
	}
}
