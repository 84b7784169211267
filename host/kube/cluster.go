package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

// Cluster is actions.Cluster over a real API server. Writes go through the
// dynamic client, so one code path serves every kind a reconcile input holds,
// the VolumeClaimUpdate custom resource included.
type Cluster struct {
	// Dynamic makes the patches and deletes.
	Dynamic dynamic.Interface
	// Events records the events; nil drops them.
	Events *EventSink
	// Declared resolves a kind abi's table does not hold: a resource a
	// module declares (ABI 1.6), as kube.ResolveWatches resolved it; nil
	// knows none.
	Declared func(kind string) (abi.Resource, bool)
}

var _ actions.Cluster = (*Cluster)(nil)

// Patch implements actions.Cluster. Server-side apply patches are forced:
// kubeplug's field manager takes the fields it applies.
func (c *Cluster) Patch(ctx context.Context, kind, namespace, name string, pt types.PatchType, data []byte, fieldManager string, subresource ...string) (string, error) {
	ri, err := c.resource(kind, namespace)
	if err != nil {
		return "", err
	}
	opts := metav1.PatchOptions{FieldManager: fieldManager}
	if pt == types.ApplyPatchType {
		force := true
		opts.Force = &force
	}
	obj, err := ri.Patch(ctx, name, pt, data, opts, subresource...)
	if err != nil {
		return "", err
	}
	return obj.GetResourceVersion(), nil
}

// Delete implements actions.Cluster with UID and resourceVersion
// preconditions, and background propagation so that the garbage collector,
// not this call, handles dependents.
func (c *Cluster) Delete(ctx context.Context, kind, namespace, name, uid, resourceVersion string) error {
	ri, err := c.resource(kind, namespace)
	if err != nil {
		return err
	}
	var pre metav1.Preconditions
	if uid != "" {
		u := types.UID(uid)
		pre.UID = &u
	}
	if resourceVersion != "" {
		pre.ResourceVersion = &resourceVersion
	}
	policy := metav1.DeletePropagationBackground
	return ri.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &pre, PropagationPolicy: &policy})
}

// RecordEvent implements actions.Cluster.
func (c *Cluster) RecordEvent(ctx context.Context, target abi.ObjectRef, eventType, reason, message, module string) error {
	if c.Events == nil {
		return nil
	}
	return c.Events.Record(target, eventType, reason, message, module)
}

// Apply implements actions.Cluster: a server-side apply that takes fields
// other managers own only when force is set.
func (c *Cluster) Apply(ctx context.Context, kind, namespace, name string, data []byte, fieldManager string, force bool, subresource string) (string, error) {
	ri, err := c.resource(kind, namespace)
	if err != nil {
		return "", err
	}
	var sub []string
	if subresource != "" {
		sub = []string{subresource}
	}
	obj, err := ri.Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}, sub...)
	if err != nil {
		return "", err
	}
	return obj.GetResourceVersion(), nil
}

// Create implements actions.Cluster with a POST.
func (c *Cluster) Create(ctx context.Context, kind, namespace string, data []byte, fieldManager string) (string, string, error) {
	ri, err := c.resource(kind, namespace)
	if err != nil {
		return "", "", err
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(data); err != nil {
		return "", "", fmt.Errorf("create %s: %w", kind, err)
	}
	obj, err := ri.Create(ctx, &u, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return "", "", err
	}
	return obj.GetName(), obj.GetResourceVersion(), nil
}

func (c *Cluster) resource(kind, namespace string) (dynamic.ResourceInterface, error) {
	gvr, namespaced, err := GVR(kind)
	if err != nil && c.Declared != nil {
		if r, ok := c.Declared(kind); ok && r.Namespaced != nil {
			gvr, namespaced, err = schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}, *r.Namespaced, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if namespaced {
		return c.Dynamic.Resource(gvr).Namespace(namespace), nil
	}
	return c.Dynamic.Resource(gvr), nil
}

// GVR returns the resource of one of the kinds a reconcile input can hold.
func GVR(kind string) (gvr schema.GroupVersionResource, namespaced bool, err error) {
	info, ok := abi.LookupKind(kind)
	if !ok {
		return gvr, false, fmt.Errorf("kind %q is not one the host writes", kind)
	}
	gv, err := schema.ParseGroupVersion(info.APIVersion)
	if err != nil {
		return gvr, false, fmt.Errorf("kind %q: %w", kind, err)
	}
	return gv.WithResource(info.Resource), info.Namespaced, nil
}

// Current implements actions.Cluster with a GET from the API server.
func (c *Cluster) Current(ctx context.Context, kind, namespace, name string) (actions.Meta, error) {
	ri, err := c.resource(kind, namespace)
	if err != nil {
		return actions.Meta{}, err
	}
	obj, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return actions.Meta{}, err
	}
	return actions.Meta{
		UID:             string(obj.GetUID()),
		ResourceVersion: obj.GetResourceVersion(),
		Finalizers:      obj.GetFinalizers(),
		Deleting:        obj.GetDeletionTimestamp() != nil,
		Generation:      obj.GetGeneration(),
	}, nil
}

// CurrentVolume implements actions.Cluster with a GET from the API server.
func (c *Cluster) CurrentVolume(ctx context.Context, name string) (actions.PersistentVolume, error) {
	ri, err := c.resource(abi.KindPersistentVolume, "")
	if err != nil {
		return actions.PersistentVolume{}, err
	}
	obj, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return actions.PersistentVolume{}, err
	}
	return actions.VolumeFromObject(obj.Object), nil
}

// CurrentClassParameters implements actions.Cluster with a GET from the API
// server.
func (c *Cluster) CurrentClassParameters(ctx context.Context, name string) (map[string]string, error) {
	ri, err := c.resource(abi.KindStorageClass, "")
	if err != nil {
		return nil, err
	}
	obj, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return actions.ClassParametersFromObject(obj.Object), nil
}
