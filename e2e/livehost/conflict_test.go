package livehost

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/kube"
	"github.com/kubeplug/kubeplug/host/metrics"
	"github.com/kubeplug/kubeplug/host/runtime"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// staleLister serves one claim as it was before the test changed it, once:
// the state a module sees when the object changes between the snapshot and
// the write.
type staleLister struct {
	snapshot.Lister
	stale *corev1.PersistentVolumeClaim
	used  bool
}

func (l *staleLister) ByIndex(idx snapshot.Index, key string) ([]k8sruntime.Object, error) {
	list, err := l.Lister.ByIndex(idx, key)
	if err != nil || l.used || idx.Name != snapshot.ClaimsBySetName.Name {
		return list, err
	}
	l.used = true
	out := slices.Clone(list)
	for i, o := range out {
		if c, ok := o.(*corev1.PersistentVolumeClaim); ok && c.Name == l.stale.Name {
			out[i] = l.stale
		}
	}
	return out, nil
}

// getClaim reads the named claim from l.
func getClaim(l snapshot.Lister, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	obj, err := l.GetObject(abi.KindPersistentVolumeClaim, ns, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.PersistentVolumeClaim), nil
}

// TestConflictIsRequeuedNotOverwritten: the host's controller, in this
// process against the real API server, reconciles a claim that changed
// after its snapshot. The write carries the old resourceVersion, the API
// server refuses it, nothing is overwritten, the key is requeued, and the
// next reconcile, on the new state, does the job and keeps the change.
func TestConflictIsRequeuedNotOverwritten(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := namespace(t)
	t.Cleanup(func() { removeFinalizers(t, ns) })
	createSet(t, ns, "web", 1)
	c := client(t)

	cache, err := kube.NewCache(c, dynamic.NewForConfigOrDie(cp.Config), kube.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	cache.Start(ctx)
	if !cache.WaitForSync(ctx) {
		t.Fatal("caches did not sync")
	}
	old, err := getClaim(cache, ns, "data-web-0")
	if err != nil {
		t.Fatal(err)
	}
	stale := old.DeepCopy()

	// The change the module does not see.
	changed := old.DeepCopy()
	changed.Labels = map[string]string{"changed-by": "test"}
	changed, err = c.CoreV1().PersistentVolumeClaims(ns).Update(ctx, changed, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "cache sees the change", func() (bool, error) {
		got, err := getClaim(cache, ns, "data-web-0")
		return err == nil && got.ResourceVersion == changed.ResourceVersion, nil
	})

	engine, err := runtime.NewEngine(ctx, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	wasm, err := os.ReadFile(guest(t, "e2e/guests/protect"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := engine.Load(ctx, "protect.wasm", wasm, runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	events := kube.NewEventSink(ctx, c, 0)
	defer events.Shutdown()
	ctrl := controller.New(controller.Module{Runtime: mod, Name: "protect"}, controller.Deps{
		Lister:  &staleLister{Lister: cache, stale: stale},
		Cluster: &kube.Cluster{Dynamic: dynamic.NewForConfigOrDie(cp.Config), Events: events},
		Metrics: m,
		Logger:  slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); ctrl.Run(runCtx) }()
	ctrl.Enqueue(ns + "/web")

	testenv.Eventually(t, wait, "finalizer added on the second try", func() (bool, error) {
		got, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-web-0", metav1.GetOptions{})
		return err == nil && slices.Contains(got.Finalizers, protectFinalizer), err
	})
	stop()
	<-done

	got, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["changed-by"] != "test" {
		t.Errorf("the test's change was overwritten: labels %v", got.Labels)
	}
	conflicts := counter(t, m, "kubeplug_reconciles_total", "conflict")
	successes := counter(t, m, "kubeplug_reconciles_total", "success")
	if conflicts != 1 || successes < 1 {
		t.Errorf("reconciles: %v conflict, %v success; want 1 conflict, then success on the requeue", conflicts, successes)
	}
}

func counter(t *testing.T, m *metrics.Metrics, name, result string) float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.Metric {
			for _, l := range s.Label {
				if l.GetName() == "result" && l.GetValue() == result {
					sum += s.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
