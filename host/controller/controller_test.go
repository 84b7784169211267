package controller_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/memcluster"
	"github.com/kubeplug/kubeplug/host/metrics"
	"github.com/kubeplug/kubeplug/host/runtime"
)

// These tests run the controller on memcluster, which is both its Lister and
// its Cluster, with the warnretain example module built from source. The
// end-to-end tests in e2e/livehost run it against a real API server.

var (
	buildOnce sync.Once
	wasm      []byte
	buildErr  error
)

func warnretain(t *testing.T) *runtime.Module {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubeplug-controller-test-")
		if err != nil {
			buildErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "warnretain.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "./examples/warnretain")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build warnretain: %v\n%s", err, b)
			return
		}
		wasm, buildErr = os.ReadFile(out)
	})
	require.NoError(t, buildErr)
	e, err := runtime.NewEngine(context.Background(), runtime.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	m, err := e.Load(context.Background(), "warnretain.wasm", wasm, runtime.Limits{})
	require.NoError(t, err)
	return m
}

func set(ns, name string, labels map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"namespace": ns, "name": name, "labels": labels},
		"spec": map[string]any{
			"replicas":             int64(1),
			"selector":             map[string]any{"matchLabels": map[string]any{"app": name}},
			"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"}}},
		},
	}
}

func newCluster(t *testing.T, objs ...map[string]any) *memcluster.Cluster {
	t.Helper()
	c := memcluster.New(memcluster.Config{})
	require.NoError(t, c.Load(objs...))
	return c
}

func TestReconcile(t *testing.T) {
	c := newCluster(t, set("default", "web", nil), set("default", "db", map[string]any{"tier": "db"}))
	m := metrics.New()
	ctrl := controller.New(controller.Module{
		Runtime:  warnretain(t),
		Name:     "warn",
		Selector: labels.SelectorFromSet(labels.Set{"tier": "db"}),
	}, controller.Deps{Lister: c, Cluster: c, Metrics: m})

	out := ctrl.Reconcile(context.Background(), "default/web")
	require.NoError(t, out.Err)
	require.Empty(t, out.Report.Actions, "web does not match the selector: the module is not called")

	out = ctrl.Reconcile(context.Background(), "default/db")
	require.NoError(t, out.Err)
	require.Equal(t, "success", out.Result)
	require.Len(t, out.Report.Actions, 1)
	events := c.Events()
	require.Len(t, events, 1, "the module's event, and no host event for an event action")
	require.Equal(t, "ClaimsRetainedForever", events[0].Reason)
	require.Equal(t, "db", events[0].InvolvedObject.Name)

	out = ctrl.Reconcile(context.Background(), "default/gone")
	require.NoError(t, out.Err)
	require.Equal(t, "success", out.Result, "a subject that no longer exists is nothing to do")

	require.Equal(t, 3.0, testutil.ToFloat64(m.Reconciles.WithLabelValues("warn", "success")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Actions.WithLabelValues("warn", "event", "executed")))
	require.Equal(t, 0.0, testutil.ToFloat64(m.GuestErrors.WithLabelValues("warn", "deadline")), "series exist from the start")
}

func TestRunHonoursNamespaces(t *testing.T) {
	c := newCluster(t, set("prod", "web", nil), set("dev", "web", nil))
	ctrl := controller.New(controller.Module{Runtime: warnretain(t), Name: "warn", Namespaces: []string{"prod"}},
		controller.Deps{Lister: c, Cluster: c})
	ctrl.Enqueue("dev/web")
	ctrl.Enqueue("prod/web")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctrl.Run(ctx) }()
	// Enqueue an in-scope key last and wait for its event: the queue is
	// FIFO per worker, so by then dev/web would have been handled too.
	require.Eventually(t, func() bool { return len(c.Events()) > 0 }, testTimeout, pollEvery)
	cancel()
	<-done
	for _, e := range c.Events() {
		require.Equal(t, "prod", e.InvolvedObject.Namespace, "dev is out of the module's namespaces")
	}
}

// TestInNamespace checks a module's namespace scope.
func TestInNamespace(t *testing.T) {
	tests := []struct {
		namespaces []string
		ns         string
		want       bool
	}{
		{nil, "default", true},
		{nil, "", true},
		{[]string{"default", "prod"}, "prod", true},
		{[]string{"default", "prod"}, "kube-system", false},
		{[]string{"default"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.ns, func(t *testing.T) {
			m := &controller.Module{Namespaces: tt.namespaces}
			require.Equal(t, tt.want, m.InNamespace(tt.ns))
		})
	}
}

// TestQueueSeries: a controller given WorkQueues reports its queue in
// client-go's workqueue_* series under the module's name, as
// kube-controller-manager and controller-runtime name theirs; Close removes
// them. Without WorkQueues (kubeplug test and check) there are none.
func TestQueueSeries(t *testing.T) {
	c := newCluster(t, set("default", "web", nil), set("default", "db", nil))
	m := metrics.New()
	ctrl := controller.New(controller.Module{Runtime: warnretain(t), Name: "warn"},
		controller.Deps{Lister: c, Cluster: c, Metrics: m, WorkQueues: m.WorkQueues()})
	ctrl.Enqueue("default/web")
	ctrl.Enqueue("default/db")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctrl.Run(ctx) }()
	require.Eventually(t, func() bool { return len(c.Events()) == 2 }, testTimeout, pollEvery)
	cancel()
	<-done
	require.NoError(t, testutil.GatherAndCompare(m.Registry, strings.NewReader(`
# HELP workqueue_adds_total Total number of adds handled by workqueue.
# TYPE workqueue_adds_total counter
workqueue_adds_total{controller="warn",name="warn"} 2
# HELP workqueue_depth Current depth of workqueue: keys waiting in a module's queue.
# TYPE workqueue_depth gauge
workqueue_depth{controller="warn",name="warn"} 0
`), "workqueue_adds_total", "workqueue_depth"))
	require.Equal(t, 1, testutil.CollectAndCount(m.Registry, "workqueue_work_duration_seconds"))

	require.NoError(t, ctrl.Close(context.Background()))
	require.Zero(t, testutil.CollectAndCount(m.Registry, "workqueue_adds_total", "workqueue_work_duration_seconds"),
		"a closed controller's queue leaves no series")

	bare := metrics.New()
	other := controller.New(controller.Module{Runtime: warnretain(t), Name: "warn"}, controller.Deps{Lister: c, Cluster: c, Metrics: bare})
	other.Enqueue("default/web")
	require.Zero(t, testutil.CollectAndCount(bare.Registry, "workqueue_adds_total"))
	require.NoError(t, other.Close(context.Background()))
}
