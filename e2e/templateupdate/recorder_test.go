package templateupdate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// step is one change the recorder saw: what, as "<verb> <object> <value>",
// and the resourceVersion of the write that made it. On this control
// plane's single etcd, resourceVersions are one increasing sequence over
// every object: they order changes of claims and pods made by different
// writers, which the informers' own deliveries do not.
type step struct {
	rv   int64
	what string
}

// recorder records, in one namespace, the changes of claims (spec request,
// status capacity) and of pods (created at a revision, deletion begun).
type recorder struct {
	mu    sync.Mutex
	steps []step
}

// Verbs of the recorded steps.
const (
	patched = "patch"  // a claim's spec request changed: "patch data-web-2 2Gi"
	resized = "resize" // a claim's status capacity changed: "resize data-web-2 2Gi"
	created = "create" // a pod was created: "create web-2 <controller-revision-hash>"
	deleted = "delete" // a pod's deletion began: "delete web-2 <controller-revision-hash>"
)

// record starts recording ns until t ends.
func record(t *testing.T, c kubernetes.Interface, ns string) *recorder {
	t.Helper()
	r := &recorder{}
	f := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(ns))
	claims := f.Core().V1().PersistentVolumeClaims().Informer()
	pods := f.Core().V1().Pods().Informer()
	_, err := claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(o, n any) {
			old, cur := o.(*corev1.PersistentVolumeClaim), n.(*corev1.PersistentVolumeClaim)
			if request(old) != request(cur) {
				r.add(cur.ResourceVersion, patched, cur.Name, request(cur))
			}
			if capacity(old) != capacity(cur) && capacity(cur) != "none" {
				r.add(cur.ResourceVersion, resized, cur.Name, capacity(cur))
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			p := o.(*corev1.Pod)
			r.add(p.ResourceVersion, created, p.Name, p.Labels[appsv1.ControllerRevisionHashLabelKey])
		},
		UpdateFunc: func(o, n any) {
			old, cur := o.(*corev1.Pod), n.(*corev1.Pod)
			if old.DeletionTimestamp == nil && cur.DeletionTimestamp != nil {
				r.add(cur.ResourceVersion, deleted, cur.Name, cur.Labels[appsv1.ControllerRevisionHashLabelKey])
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(t.Context().Done())
	f.WaitForCacheSync(t.Context().Done())
	t.Cleanup(f.Shutdown)
	return r
}

func (r *recorder) add(rv, verb, name, value string) {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("resourceVersion %q is not etcd's revision: %v", rv, err))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, step{n, verb + " " + name + " " + value})
}

// history is what was recorded so far, in resourceVersion order.
func (r *recorder) history() []step {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.steps)
	slices.SortStableFunc(out, func(a, b step) int { return int(a.rv - b.rv) })
	return out
}

// first is the resourceVersion of the first step starting with prefix
// (e.g. "resize data-web-2 2Gi", "delete web-2"), 0 when none.
func first(h []step, prefix string) int64 {
	for _, s := range h {
		if strings.HasPrefix(s.what, prefix) {
			return s.rv
		}
	}
	return 0
}

func format(h []step) string {
	var b strings.Builder
	for _, s := range h {
		fmt.Fprintf(&b, "\n  %d %s", s.rv, s.what)
	}
	return b.String()
}
