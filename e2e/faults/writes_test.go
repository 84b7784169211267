package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// writeWatch records the writes to a namespace's claims, pods, sets,
// VolumeClaimUpdates and events, and to the volumes bound to its claims,
// from the moment watchWrites returns until stop.
//
// Each kind is watched by an informer, not a bare watch: a watch ends with
// its connection (a restarted API server, a broken connection) and what is
// written before the next one starts would go uncounted; an informer
// watches again from where it was, and when the new server no longer has
// that resourceVersion (a new server's watch cache starts afresh) it lists
// again, and the objects that changed, appeared or went in between reach
// its handlers as updates, adds and deletes.
type writeWatch struct {
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu     sync.Mutex
	writes []string
}

// The kinds whose writes count, by the name the messages give them; the
// volumes are watched cluster-wide and filtered to the namespace's claims.
var (
	watchedKinds = []struct {
		name string
		gvr  schema.GroupVersionResource
	}{
		{"claim", corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")},
		{"pod", corev1.SchemeGroupVersion.WithResource("pods")},
		{"statefulset", appsv1.SchemeGroupVersion.WithResource("statefulsets")},
		{"event", corev1.SchemeGroupVersion.WithResource("events")},
		{"volumeclaimupdate", vcuGVR},
	}
	volumesGVR = corev1.SchemeGroupVersion.WithResource("persistentvolumes")
)

// listBound bounds the informers' first list: a hung run, not a
// performance assertion.
const listBound = time.Minute

// watchWrites starts the informers and returns once each has listed: the
// objects as they are then are not writes, every change after is.
func watchWrites(ctx context.Context, dyn dynamic.Interface, ns string) (*writeWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &writeWatch{cancel: cancel}
	namespaced := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	cluster := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	var synced []cache.InformerSynced
	add := func(name string, inf cache.SharedIndexInformer) error {
		_, err := inf.AddEventHandler(w.handler(name, ns))
		synced = append(synced, inf.HasSynced)
		return err
	}
	for _, k := range watchedKinds {
		if err := add(k.name, namespaced.ForResource(k.gvr).Informer()); err != nil {
			cancel()
			return nil, err
		}
	}
	if err := add("persistentvolume", cluster.ForResource(volumesGVR).Informer()); err != nil {
		cancel()
		return nil, err
	}
	namespaced.Start(ctx.Done())
	cluster.Start(ctx.Done())
	w.done.Go(func() { <-ctx.Done(); namespaced.Shutdown(); cluster.Shutdown() })
	// Bounded: an informer that cannot list (a kind the API server does not
	// serve) retries for ever.
	syncCtx, cancelSync := context.WithTimeout(ctx, listBound)
	defer cancelSync()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		w.stop()
		return nil, fmt.Errorf("the informers of the quiet window did not list within %v: %w", listBound, context.Cause(syncCtx))
	}
	return w, nil
}

// handler counts every change an informer reports after its first list:
// an add, an update to a new resourceVersion (an informer that lists again
// reports each object as an update, changed or not), a delete.
func (w *writeWatch) handler(name, ns string) cache.ResourceEventHandler {
	count := func(what string, obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		o, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		if name == "persistentvolume" {
			if claimNS, _, _ := unstructured.NestedString(o.Object, "spec", "claimRef", "namespace"); claimNS != ns {
				return
			}
		}
		desc := fmt.Sprintf("%s %s %s", what, name, o.GetName())
		if m := lastManager(o.GetManagedFields()); m != "" {
			desc += " (" + m + ")"
		}
		if name == "event" { // what it says, for telling who catches up from who loops
			typ, _, _ := unstructured.NestedString(o.Object, "type")
			reason, _, _ := unstructured.NestedString(o.Object, "reason")
			n, _, _ := unstructured.NestedInt64(o.Object, "count")
			msg, _, _ := unstructured.NestedString(o.Object, "message")
			desc += fmt.Sprintf(" [%s %s ×%d: %s]", typ, reason, n, tail(msg, 100))
		}
		w.mu.Lock()
		w.writes = append(w.writes, desc)
		w.mu.Unlock()
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				count("ADDED", obj)
			}
		},
		UpdateFunc: func(old, obj any) {
			if o, n := old.(*unstructured.Unstructured), obj.(*unstructured.Unstructured); o.GetResourceVersion() != n.GetResourceVersion() {
				count("MODIFIED", obj)
			}
		},
		DeleteFunc: func(obj any) { count("DELETED", obj) },
	}
}

// seen returns the writes so far.
func (w *writeWatch) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

// stop ends the informers and returns the writes they saw.
func (w *writeWatch) stop() []string {
	w.cancel()
	w.done.Wait()
	return w.seen()
}

// countFor watches for window and returns the writes seen.
func countFor(ctx context.Context, dyn dynamic.Interface, ns string, window time.Duration) ([]string, error) {
	w, err := watchWrites(ctx, dyn, ns)
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
	case <-time.After(window):
	}
	return w.stop(), nil
}

// TestQuietWindowSurvivesRestart: the quiet window's watches go on across
// a restart of kube-apiserver. A claim created after the new server
// answers is counted; a bare watch, ended with the old server, would miss
// it and report a quiet window that was not.
func TestQuietWindowSurvivesRestart(t *testing.T) {
	ctx := t.Context()
	c, dyn := cp.Client(), dynamic.NewForConfigOrDie(cp.Config)
	if err := testenv.InstallCRDs(ctx, cp.Config, testenv.ClaimUpdateCRD()); err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, c)
	claim := func(name string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
	}
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := watchWrites(ctx, dyn, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer w.stop()
	if err := cp.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.Timeout, "a claim created after the restart", func() (bool, error) {
		_, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim("after"), metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
	// A write reads "ADDED claim NAME (field manager)".
	added := func(name string) bool {
		return slices.ContainsFunc(w.seen(), func(s string) bool { return strings.HasPrefix(s, "ADDED claim "+name+" ") })
	}
	testenv.Eventually(t, testenv.Timeout, "the quiet window to count the claim created after the restart", func() (bool, error) {
		return added("after"), nil
	})
	if added("before") {
		t.Errorf("the claim that existed before the window counted as a write: %q", w.seen())
	}
}

// lastManager names the field manager that wrote last, by its entry's time
// (the API server keeps entries in no order of time), with its
// subresource: the best guess at who made a change; "" with none.
func lastManager(mf []metav1.ManagedFieldsEntry) string {
	last := -1
	for i := range mf {
		if mf[i].Time == nil {
			continue
		}
		if last < 0 || !mf[i].Time.Before(mf[last].Time) {
			last = i
		}
	}
	if last < 0 {
		return ""
	}
	if sub := mf[last].Subresource; sub != "" {
		return mf[last].Manager + ", " + sub
	}
	return mf[last].Manager
}
