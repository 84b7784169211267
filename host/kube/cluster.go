package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func (c *Cluster) resource(kind, namespace string) (dynamic.ResourceInterface, error) {
	gvr, namespaced, err := GVR(kind)
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
