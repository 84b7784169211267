package memcluster

import (
	"maps"

	"k8s.io/apimachinery/pkg/runtime"
)

// Clone returns a deep copy of c: its objects, resourceVersion counter,
// write and request counts, events, volume deletions and field ownership,
// with c's clock and drivers. The copy and c change independently from then
// on. `kubeplug check` keeps clones as the cluster's past versions, to hand
// a module the stale view of a lagging informer and to go on from a state
// more than once.
func (c *Cluster) Clone() *Cluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &Cluster{
		now:      c.now,
		drivers:  c.drivers, // never written after New
		objects:  make(map[Key]map[string]any, len(c.objects)),
		rv:       c.rv,
		writes:   c.writes,
		requests: c.requests,
		events:   append([]Event(nil), c.events...),
		deletes:  make([]VolumeDelete, len(c.deletes)),
	}
	for k, obj := range c.objects {
		out.objects[k] = runtime.DeepCopyJSON(obj)
	}
	for i, d := range c.deletes {
		out.deletes[i] = d
		if d.Secrets != nil {
			s := *d.Secrets
			out.deletes[i].Secrets = &s
		}
	}
	if c.owners != nil {
		out.owners = make(map[string]ownership, len(c.owners))
		for uid, o := range c.owners {
			cp := make(ownership, len(o))
			for m, fields := range o {
				cp[m] = maps.Clone(fields)
			}
			out.owners[uid] = cp
		}
	}
	return out
}
