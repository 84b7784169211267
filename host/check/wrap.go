package check

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/resource"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/casetest"
	"github.com/kubeplug/kubeplug/host/memcluster"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// errCrashed is what every call of a crashed host gets.
var errCrashed = errors.New("the host crashed (kubeplug check)")

// host is the API server and CSI driver as one host process reaches them:
// it counts the process's writes, stops it (every call fails, nothing more
// is written or recorded) once crashAfter writes of the round are made, and
// reports each write to the execution.
type host struct {
	c *memcluster.Cluster
	x *execution
	// crashAfter is the number of writes the round may make before the
	// crash; negative: no crash.
	crashAfter int
	writes     int
	crashed    bool
	// after is the index of the cluster's version after each write of the
	// round (roundInfo.after).
	after []int
}

var (
	_ actions.Cluster       = (*host)(nil)
	_ actions.VolumeDeleter = (*host)(nil)
)

// write reports whether the next write may go out, crashing the host when
// it may not; the caller calls wrote once it is made.
func (h *host) write() bool {
	if h.crashed || (h.crashAfter >= 0 && h.writes >= h.crashAfter) {
		h.crashed = true
		return false
	}
	h.writes++
	return true
}

// wrote records the version after the write write allowed, whether or not
// it changed the cluster.
func (h *host) wrote() { h.after = append(h.after, len(h.x.res.versions)-1) }

func (h *host) Patch(ctx context.Context, kind, namespace, name string, pt types.PatchType, data []byte, fieldManager string, subresource ...string) (string, error) {
	if !h.write() {
		return "", errCrashed
	}
	before, _ := h.c.Get(kind, namespace, name)
	rv, err := h.c.Patch(ctx, kind, namespace, name, pt, data, fieldManager, subresource...)
	if err == nil {
		by := "module: patch " + casetest.ObjectKey{Kind: kind, Namespace: namespace, Name: name}.String()
		after, _ := h.c.Get(kind, namespace, name)
		if kind == abi.KindPersistentVolumeClaim {
			h.x.checkShrink(before, after, by)
		}
		h.x.wrote(by)
	}
	h.wrote()
	return rv, err
}

func (h *host) Apply(ctx context.Context, kind, namespace, name string, data []byte, fieldManager string, force bool, subresource string) (string, error) {
	if !h.write() {
		return "", errCrashed
	}
	rv, err := h.c.Apply(ctx, kind, namespace, name, data, fieldManager, force, subresource)
	if err == nil {
		h.x.wrote("module: apply " + casetest.ObjectKey{Kind: kind, Namespace: namespace, Name: name}.String())
	}
	h.wrote()
	return rv, err
}

func (h *host) Create(ctx context.Context, kind, namespace string, data []byte, fieldManager string) (string, string, error) {
	if !h.write() {
		return "", "", errCrashed
	}
	name, rv, err := h.c.Create(ctx, kind, namespace, data, fieldManager)
	if err == nil {
		h.x.wrote("module: create " + casetest.ObjectKey{Kind: kind, Namespace: namespace, Name: name}.String())
	}
	h.wrote()
	return name, rv, err
}

func (h *host) Delete(ctx context.Context, kind, namespace, name, uid, resourceVersion string) error {
	if !h.write() {
		return errCrashed
	}
	err := h.c.Delete(ctx, kind, namespace, name, uid, resourceVersion)
	if err == nil {
		h.x.wrote("module: deleteObject " + casetest.ObjectKey{Kind: kind, Namespace: namespace, Name: name}.String())
	}
	h.wrote()
	return err
}

func (h *host) DeleteVolume(ctx context.Context, driver, handle string, secrets *abi.SecretReference) error {
	if !h.write() {
		return errCrashed
	}
	err := h.c.DeleteVolume(ctx, driver, handle, secrets)
	if err == nil {
		h.x.wrote("module: deleteVolume " + driver + "/" + handle)
	}
	h.wrote()
	return err
}

func (h *host) Configured(driver string) bool { return h.c.Configured(driver) }

func (h *host) Current(ctx context.Context, kind, namespace, name string) (actions.Meta, error) {
	if h.crashed {
		return actions.Meta{}, errCrashed
	}
	return h.c.Current(ctx, kind, namespace, name)
}

func (h *host) CurrentVolume(ctx context.Context, name string) (actions.PersistentVolume, error) {
	if h.crashed {
		return actions.PersistentVolume{}, errCrashed
	}
	return h.c.CurrentVolume(ctx, name)
}

func (h *host) CurrentClassParameters(ctx context.Context, name string) (map[string]string, error) {
	if h.crashed {
		return nil, errCrashed
	}
	return h.c.CurrentClassParameters(ctx, name)
}

func (h *host) RecordEvent(ctx context.Context, target abi.ObjectRef, eventType, reason, message, module string) error {
	if h.crashed {
		return nil // a dead process records nothing
	}
	return h.c.RecordEvent(ctx, target, eventType, reason, message, module)
}

// lister is the host's informer caches: each kind from the cluster now, or
// from a past version of it while that kind's informer lags.
type lister struct {
	now  *memcluster.Cluster
	lags map[string]*memcluster.Cluster
}

func (l *lister) of(kind string) *memcluster.Cluster {
	if c := l.lags[kind]; c != nil {
		return c
	}
	return l.now
}

func (l *lister) GetObject(kind, namespace, name string) (k8sruntime.Object, error) {
	return l.of(kind).GetObject(kind, namespace, name)
}

func (l *lister) ByIndex(idx snapshot.Index, key string) ([]k8sruntime.Object, error) {
	return l.of(idx.Kind).ByIndex(idx, key)
}

// storage returns a claim's requested storage and capacity.
func storage(claim map[string]any) (req, capacity *resource.Quantity) {
	get := func(path ...string) *resource.Quantity {
		var v any = claim
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		s, _ := v.(string)
		q, err := resource.ParseQuantity(s)
		if s == "" || err != nil {
			return nil
		}
		return &q
	}
	return get("spec", "resources", "requests", "storage"), get("status", "capacity", "storage")
}
