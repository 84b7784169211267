package retention

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// refsChange is one write that changed a claim's owner references.
type refsChange struct {
	// prevRV is the resourceVersion the write was made on; rv the one it
	// made.
	prevRV, rv string
	// from and to are the references before and after.
	from, to []metav1.OwnerReference
	// managers are the managedFields entries the write created or
	// updated. A write that only removes fields updates none.
	managers []string
	// writer is who made it, filled in by attribute.
	writer string
}

// claimHistory is what one claim (one UID) went through while recorded.
type claimHistory struct {
	name    string
	uid     types.UID
	initial []metav1.OwnerReference
	changes []refsChange
	deleted bool

	// last is the newest version seen.
	last *corev1.PersistentVolumeClaim
}

// values is the sequence of reference lists the claim had, initial first.
func (h *claimHistory) values() [][]metav1.OwnerReference {
	out := [][]metav1.OwnerReference{h.initial}
	for _, c := range h.changes {
		out = append(out, c.to)
	}
	return out
}

// recorder watches every claim of a namespace and keeps, per claim, the
// sequence of its owner references and who changed them. It starts before
// the scenario creates anything, so it sees every claim from its creation.
type recorder struct {
	ns string

	mu     sync.Mutex
	claims map[types.UID]*claimHistory
	order  []types.UID
	err    error

	cancel context.CancelFunc
	done   chan struct{}
}

func record(t *testing.T, ns string) *recorder {
	t.Helper()
	c := client(t)
	pvcs := c.CoreV1().PersistentVolumeClaims(ns)
	list, err := pvcs.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{ns: ns, claims: map[types.UID]*claimHistory{}, cancel: cancel, done: make(chan struct{})}
	for i := range list.Items {
		r.observe(watch.Added, &list.Items[i])
	}
	go func() {
		defer close(r.done)
		err := follow(ctx, list.ResourceVersion, "claims in "+ns, pvcs.Watch, func(ev watch.Event) {
			if pvc, ok := ev.Object.(*corev1.PersistentVolumeClaim); ok {
				r.observe(ev.Type, pvc)
			}
		})
		if err != nil {
			r.fail(err)
		}
	}()
	t.Cleanup(r.stop)
	return r
}

// follow hands keep every event of a watch that resumes from rv after each
// break, until ctx ends or the watch does. A watch error ends it and is
// returned, naming what was watched.
func follow(ctx context.Context, rv, what string, watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), keep func(watch.Event)) error {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{WatchFuncWithContext: watchFn})
	if err != nil {
		return fmt.Errorf("watch of %s: %w", what, err)
	}
	defer rw.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-rw.ResultChan():
			if !ok {
				return nil
			}
			if ev.Type == watch.Error {
				return fmt.Errorf("watch of %s: %v", what, ev.Object)
			}
			keep(ev)
		}
	}
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func (r *recorder) observe(typ watch.EventType, pvc *corev1.PersistentVolumeClaim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.claims[pvc.UID]
	if !ok {
		h = &claimHistory{name: pvc.Name, uid: pvc.UID, initial: pvc.OwnerReferences, last: pvc}
		r.claims[pvc.UID] = h
		r.order = append(r.order, pvc.UID)
		if typ == watch.Deleted {
			h.deleted = true
		}
		return
	}
	prev := h.last
	h.last = pvc
	if typ == watch.Deleted {
		h.deleted = true
	}
	if refsKey(prev.OwnerReferences) == refsKey(pvc.OwnerReferences) {
		return
	}
	h.changes = append(h.changes, refsChange{
		prevRV:   prev.ResourceVersion,
		rv:       pvc.ResourceVersion,
		from:     prev.OwnerReferences,
		to:       pvc.OwnerReferences,
		managers: updatedManagers(prev.ManagedFields, pvc.ManagedFields),
	})
}

// stop ends the watch; the histories stay.
func (r *recorder) stop() {
	r.cancel()
	<-r.done
}

// histories returns the claims' histories in the order they were created.
func (r *recorder) histories() ([]*claimHistory, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*claimHistory, 0, len(r.order))
	for _, uid := range r.order {
		out = append(out, r.claims[uid])
	}
	return out, r.err
}

// updatedManagers returns the managers that made the change from before to
// after: those whose managedFields entry is new, has a new time, or owns a
// field it did not own before. An entry that only lost fields belongs to a
// manager whose fields somebody else removed.
func updatedManagers(before, after []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, a := range after {
		i := slices.IndexFunc(before, func(b metav1.ManagedFieldsEntry) bool {
			return b.Manager == a.Manager && b.Operation == a.Operation && b.Subresource == a.Subresource
		})
		made := i < 0
		if !made {
			b := before[i]
			made = !b.Time.Equal(a.Time) || gained(b.FieldsV1, a.FieldsV1)
		}
		if made && !slices.Contains(out, a.Manager) {
			out = append(out, a.Manager)
		}
	}
	return out
}

// gained reports whether after holds a field path that before does not.
func gained(before, after *metav1.FieldsV1) bool {
	had := map[string]bool{}
	for _, p := range fieldPaths(before) {
		had[p] = true
	}
	for _, p := range fieldPaths(after) {
		if !had[p] {
			return true
		}
	}
	return false
}

// fieldPaths flattens a FieldsV1 set into its paths, e.g.
// "f:metadata/f:ownerReferences/k:{...}/.".
func fieldPaths(f *metav1.FieldsV1) []string {
	if f == nil {
		return nil
	}
	var tree map[string]any
	if err := json.Unmarshal(f.Raw, &tree); err != nil {
		return []string{string(f.Raw)}
	}
	var out []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			p := prefix + "/" + k
			out = append(out, p)
			if sub, ok := v.(map[string]any); ok {
				walk(p, sub)
			}
		}
	}
	walk("", tree)
	return out
}

// refsKey identifies a list of references, UIDs included, in any order.
func refsKey(refs []metav1.OwnerReference) string {
	parts := make([]string, 0, len(refs))
	for _, r := range refs {
		parts = append(parts, refString(r)+"#"+string(r.UID))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// refsShape is refs without UIDs, in any order: what the policy decides.
// "none" when empty.
func refsShape(refs []metav1.OwnerReference) string {
	if len(refs) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(refs))
	for _, r := range refs {
		parts = append(parts, refString(r))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func refString(r metav1.OwnerReference) string {
	s := r.Kind + "/" + r.Name
	if r.Controller != nil && *r.Controller {
		s += "(controller"
		if r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
			s += ",blocking"
		}
		s += ")"
	} else if r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
		s += "(blocking)"
	}
	return s
}
