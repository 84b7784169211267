package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/kubeplug/kubeplug/abi"
)

// ErrNotServed is the error of Resolve when the API server does not serve
// a declared resource: a CRD not installed yet. The module that declares
// it waits, unready, and is loaded once discovery finds it.
var ErrNotServed = errors.New("not served by the API server")

// Resolve returns r with its kind and scope as the API server's discovery
// says them. A kind or scope the declaration gives must agree; the
// resource must be one the host can watch (list and watch) and read (get).
// It fails with an error wrapping ErrNotServed when the group, version or
// resource is not served.
func Resolve(ctx context.Context, d discovery.ServerResourcesInterfaceWithContext, r abi.Resource) (abi.Resource, error) {
	gv := schema.GroupVersion{Group: r.Group, Version: r.Version}
	list, err := d.ServerResourcesForGroupVersionWithContext(ctx, gv.String())
	if apierrors.IsNotFound(err) {
		return r, fmt.Errorf("resolve %s: %s %w (install its CRD, or check the group and version)", r, gv, ErrNotServed)
	}
	if err != nil {
		return r, fmt.Errorf("resolve %s: discover %s: %w", r, gv, err)
	}
	for _, a := range list.APIResources {
		if a.Name != r.Resource {
			continue
		}
		switch {
		case r.Kind != "" && r.Kind != a.Kind:
			return r, fmt.Errorf("resolve %s: the declaration says kind %s, the API server %s: fix the declaration's kind, or drop it", r, r.Kind, a.Kind)
		case r.Namespaced != nil && *r.Namespaced != a.Namespaced:
			return r, fmt.Errorf("resolve %s: the declaration says namespaced: %t, the API server %t: fix the declaration's scope, or drop it", r, *r.Namespaced, a.Namespaced)
		}
		for _, verb := range []string{"get", "list", "watch"} {
			if !slices.Contains(a.Verbs, verb) {
				return r, fmt.Errorf("resolve %s: the API server does not serve %q on it (it serves %v): the host watches what it reconciles and reads", r, verb, []string(a.Verbs))
			}
		}
		out := r
		out.Kind = a.Kind
		namespaced := a.Namespaced
		out.Namespaced = &namespaced
		return out, nil
	}
	return r, fmt.Errorf("resolve %s: %s has no resource %q %w", r, gv, r.Resource, ErrNotServed)
}

// ResolveWatches resolves the subject and every relation of w (Resolve),
// returning a resolved copy. Two resources of one kind in different groups
// (among them and the host's built-in kinds, abi.Kinds) are refused: the
// host's caches know a resource by its kind.
func ResolveWatches(ctx context.Context, d discovery.ServerResourcesInterfaceWithContext, w *abi.Watches) (*abi.Watches, error) {
	out := &abi.Watches{Relations: slices.Clone(w.Relations)}
	var err error
	if out.Subject, err = Resolve(ctx, d, w.Subject); err != nil {
		return nil, fmt.Errorf("watches.subject: %w", err)
	}
	groups := map[string]string{}
	for kind, info := range abi.Kinds() {
		gv, _ := schema.ParseGroupVersion(info.APIVersion)
		groups[kind] = gv.Group
	}
	if g, ok := groups[out.Subject.Kind]; ok && g != out.Subject.Group {
		return nil, fmt.Errorf("watches.subject: kind %s is in group %q and in group %q: the host cannot watch two kinds of one name yet", out.Subject.Kind, g, out.Subject.Group)
	}
	groups[out.Subject.Kind] = out.Subject.Group
	for i := range out.Relations {
		r := &out.Relations[i]
		if r.Resource, err = Resolve(ctx, d, r.Resource); err != nil {
			return nil, fmt.Errorf("watches.relations[%d] (%s): %w", i, r.Name, err)
		}
		if g, ok := groups[r.Resource.Kind]; ok && g != r.Resource.Group {
			return nil, fmt.Errorf("watches.relations[%d] (%s): kind %s is in group %q and in group %q: the host cannot watch two kinds of one name yet", i, r.Name, r.Resource.Kind, g, r.Resource.Group)
		}
		groups[r.Resource.Kind] = r.Resource.Group
	}
	return out, nil
}
