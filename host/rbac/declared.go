package rbac

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeplug/kubeplug/abi"
)

// declared adds what the host does for m, a module that declares its
// subject and related objects (ABI 1.6): an informer (list, watch) on each
// declared resource, events on its subject, and the verbs of each granted
// generic action on the declared resources it names. A namespaced
// resource is granted in m's namespaces (all when none), a cluster-scoped
// one cluster-wide; the scope is the declaration's, or abi's for a kind
// the host knows, and derivation fails when it is neither, since a wrong
// guess grants too much or too little.
func (b *builder) declared(m Module) error {
	w := m.Watches
	resources := []abi.Resource{w.Subject}
	for _, r := range w.Relations {
		resources = append(resources, r.Resource)
	}
	scoped := make([]bool, len(resources))
	for i, r := range resources {
		namespaced, err := scopeOf(r)
		if err != nil {
			return fmt.Errorf("module %q: %w", m.Name, err)
		}
		scoped[i] = namespaced
	}
	in := func(i int) []string {
		if scoped[i] {
			return m.Namespaces
		}
		return nil
	}
	// kube.Cache: an informer on every declared resource, the module's
	// own, so shadow modules and admit-only ones have them too.
	for i, r := range resources {
		b.add(in(i), r.Group, r.Resource, "", "list", "watch")
	}
	if m.Shadow || !slices.Contains(m.Hooks, abi.HookReconcile) {
		return nil
	}
	// Executor.recordRefusal: a Warning event on the subject.
	b.addDeclaredEvents(in(0), scoped[0])
	for _, c := range m.Granted {
		for i, r := range resources {
			if !c.AllowsResource(c.Action, r, "") {
				continue
			}
			switch c.Action {
			case abi.ActionApply, abi.ActionAddFinalizer, abi.ActionRemoveFinalizer:
				// A server-side apply, or a merge patch of
				// metadata.finalizers.
				b.add(in(i), r.Group, r.Resource, "", "patch")
			case abi.ActionCreate:
				b.add(in(i), r.Group, r.Resource, "", "create")
			case abi.ActionDeleteObject:
				b.add(in(i), r.Group, r.Resource, "", "delete")
			case abi.ActionEvent:
				b.addDeclaredEvents(in(i), scoped[i])
			}
		}
		if c.AllowsResource(abi.ActionApplyStatus, w.Subject, "status") {
			b.add(in(0), w.Subject.Group, w.Subject.Resource+"/status", "", "patch")
		}
	}
	return nil
}

// addDeclaredEvents grants events on objects of a scope: in namespaces ns
// for a namespaced kind, in "default" for a cluster-scoped one.
func (b *builder) addDeclaredEvents(ns []string, namespaced bool) {
	if !namespaced {
		ns = []string{"default"}
	}
	b.add(ns, "", "events", "", "create", "patch")
}

// scopeOf is whether r is namespaced: as its declaration says, or as abi's
// table of the kinds the host knows says.
func scopeOf(r abi.Resource) (bool, error) {
	if r.Namespaced != nil {
		return *r.Namespaced, nil
	}
	for _, k := range abi.Kinds() {
		gv, _ := schema.ParseGroupVersion(k.APIVersion)
		if gv.Group == r.Group && k.Resource == r.Resource {
			return k.Namespaced, nil
		}
	}
	return false, fmt.Errorf("the scope of %s is not declared: give namespaced: true or false in its declaration, so that its RBAC is granted where it lives", r)
}
