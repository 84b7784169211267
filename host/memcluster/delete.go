package memcluster

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// Delete implements actions.Cluster. uid and resourceVersion are
// preconditions (empty skips one): a mismatch is a conflict. An object with
// finalizers is marked for deletion instead of removed: it gets a
// deletionTimestamp from the cluster's clock, deletionGracePeriodSeconds 0 and
// its next generation; deleting it again changes nothing. Nothing is
// cascaded: no garbage collector runs.
func (c *Cluster) Delete(ctx context.Context, kind, namespace, name, uid, resourceVersion string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++

	k := c.key(kind, namespace, name)
	stored, ok := c.objects[k]
	if !ok {
		return apierrors.NewNotFound(groupResource(kind), name)
	}
	if err := checkPreconditions(k, stored, uid, resourceVersion); err != nil {
		return err
	}
	if len(finalizers(stored)) == 0 {
		c.remove(k, stored)
		return nil
	}
	if str(metadata(stored), "deletionTimestamp") != "" {
		return nil
	}
	updated := runtime.DeepCopyJSON(stored)
	meta := metadata(updated)
	meta["deletionTimestamp"] = timestamp(c.now())
	meta["deletionGracePeriodSeconds"] = int64(0)
	if g := generation(stored); g > 0 {
		meta["generation"] = g + 1
	}
	c.store(k, updated)
	return nil
}
