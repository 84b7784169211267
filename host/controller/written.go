package controller

import (
	"sync"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

// StaleWait bounds how long a key waits for the host's caches to show the
// writes its last reconcile made. Past it the module is called anyway: a
// write the API server took as a no-op keeps its resourceVersion, and the
// cache would never show another.
const StaleWait = 5 * time.Second

// resultStale is the Outcome of a reconcile put off for a stale input: the
// module was not called, and the reconcile series do not count it
// (kubeplug_reconcile_stale_inputs_total does).
const resultStale = "stale"

// staleRetry is when a key whose input was stale is tried again; the
// informer's event for the written object usually queues it sooner.
const staleRetry = 100 * time.Millisecond

// writes is what each key's last reconcile wrote, so that the next one is
// not decided on a cache that has not seen those writes yet. The informers
// of different kinds deliver independently: after the host moves a
// StatefulSet's partition and then records it on a VolumeClaimUpdate, the
// record's event can reach the cache before the set's, and a module would
// read its own earlier partition as the user's.
type writes struct {
	mu  sync.Mutex
	key map[string]written
}

type written struct {
	objects map[abi.ObjectRef]string // resourceVersion before the write
	at      time.Time
}

// record keeps what rep wrote for key; a reconcile that wrote nothing
// forgets the key.
func (w *writes) record(key string, rep actions.Report) {
	objs := rep.Written
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(objs) == 0 {
		delete(w.key, key)
		return
	}
	if w.key == nil {
		w.key = make(map[string]written)
	}
	w.key[key] = written{objects: objs, at: time.Now()}
}

// stale returns an object of req the cache shows as it was before key's
// last writes, while StaleWait has not passed since them.
func (w *writes) stale(key string, req *abi.ReconcileRequest) (abi.ObjectRef, bool) {
	w.mu.Lock()
	last, ok := w.key[key]
	if ok && time.Since(last.at) > StaleWait {
		delete(w.key, key) // nothing left to wait for
		ok = false
	}
	w.mu.Unlock()
	if !ok {
		return abi.ObjectRef{}, false
	}
	return actions.Stale(req, last.objects)
}

// forget drops key, whose subject is gone: its reconciles call no module,
// so nothing else would ever remove it.
func (w *writes) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.key, key)
}
