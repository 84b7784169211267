package check

import (
	"fmt"

	"github.com/kubeplug/kubeplug/host/internal/input"
	"github.com/kubeplug/kubeplug/host/memcluster"
)

// maxRunBytes bounds the cluster's versions one run keeps (a copy after
// every write), in bytes of Go heap as heapBytes estimates them. A case's
// steps choose how many writes a run makes and its objects how large each
// copy is, so a count of objects bounds neither: three claims with
// 99,000-entry lists and 100 steps kept 4.4 GiB within 50,000 objects.
const maxRunBytes = 128 << 20

// maxHeldBytes bounds the versions an exploration keeps from runs that
// have ended: the unperturbed run's (the views of stale rounds, at most
// maxRunBytes) and those of the unobserved runs the unobserved-stale class
// is planned from, each cut to the versions its views show. With the run
// in progress an exploration keeps at most maxRunBytes+maxHeldBytes.
const maxHeldBytes = 128 << 20

// Estimated heap bytes of the parts of a JSON-shaped value (amd64): a map's
// header and, per entry, its key and value slots with the map's spare room;
// a slice's header, boxed, and an interface per element; a boxed number.
const (
	mapBytes     = 48
	mapSlotBytes = 40
	sliceBytes   = 24
	elemBytes    = 16
	numberBytes  = 8
)

// heapBytes estimates the heap a JSON-shaped value takes. It counts the
// bytes of every string, though a copy of a version shares them with the
// cluster it was copied from: a bound on the estimate is the safe side of
// one on the heap.
func heapBytes(v any) int64 {
	switch v := v.(type) {
	case map[string]any:
		n := int64(mapBytes + mapSlotBytes*len(v))
		for k, e := range v {
			n += int64(len(k)) + heapBytes(e)
		}
		return n
	case []any:
		n := int64(sliceBytes + elemBytes*len(v))
		for _, e := range v {
			n += heapBytes(e)
		}
		return n
	case string:
		return int64(len(v))
	case int64, float64:
		return numberBytes
	}
	return 0
}

// keep adds c, whose objects are objs, to the run's versions, or ends the
// run (ErrTooLarge) when that would keep more than maxRunBytes. An object
// is measured once per resourceVersion: a write changes one object, and
// measuring the others again would cost a walk of the whole cluster.
func (x *execution) keep(c *memcluster.Cluster, objs map[string]map[string]any) bool {
	var n int64
	for _, o := range objs {
		rv, _ := meta(o)["resourceVersion"].(string)
		id := uidOf(o) + "@" + rv
		b, ok := x.sizes[id]
		if !ok {
			b = heapBytes(o)
			x.sizes[id] = b
		}
		n += b
	}
	if x.kept+n > maxRunBytes {
		x.stop = fmt.Errorf("%w: a run would keep more than %s of the cluster's versions (a copy after each write, %s for the copy after write %d); "+
			"split it into smaller cases, with fewer or smaller objects or fewer steps", ErrTooLarge, input.Bytes(maxRunBytes), input.Bytes(n), len(x.res.versions))
		return false
	}
	x.kept += n
	x.res.versions = append(x.res.versions, c.Clone())
	x.res.sizes = append(x.res.sizes, n)
	return true
}

// hold keeps res, an unobserved run of phase, for the unobserved-stale
// perturbations planned from it: only the versions their views show (a
// round of the next phase's, and MaxLag before it). It reports false, and
// keeps nothing, when that would hold more than maxHeldBytes.
func (r *runner) hold(res *result, phase int) bool {
	need := make([]bool, len(res.versions))
	for _, pr := range res.rounds {
		if pr.phase != phase+1 {
			continue
		}
		for v := max(pr.version-MaxLag, 0); v <= pr.version; v++ {
			need[v] = true
		}
	}
	var n int64
	for v, ok := range need {
		if ok {
			n += res.sizes[v]
		}
	}
	if r.held+n > maxHeldBytes {
		return false
	}
	r.held += n
	for v, ok := range need {
		if !ok {
			res.versions[v] = nil
		}
	}
	return true
}
