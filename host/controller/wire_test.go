package controller_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/kube"
)

// keyGuest is a module of one subject that reports every key it is asked
// to reconcile.
type keyGuest struct {
	subject string
	keys    chan string
}

func (g *keyGuest) Manifest() abi.Manifest {
	return abi.Manifest{Name: "keys", Version: "0.1.0", Subject: g.subject}
}

func (g *keyGuest) Reconcile(_ context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	g.keys <- req.Key
	return &abi.Result{}, nil
}

func (g *keyGuest) Close(context.Context) error { return nil }

// TestWireQueuesBySubjectDescriptor: over the live cache's informers, each
// controller is queued the keys of its own subject kind (from abi's
// descriptor: "namespace/name" for a StatefulSet, "name" for a cluster-scoped
// PersistentVolume).
func TestWireQueuesBySubjectDescriptor(t *testing.T) {
	client := fake.NewSimpleClientset(
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}},
	)
	cache, err := kube.NewCache(client, dynfake.NewSimpleDynamicClient(runtime.NewScheme()), kube.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cache.Start(ctx)
	defer func() { cancel(); cache.Shutdown() }()
	require.True(t, cache.WaitForSync(ctx))

	got := map[string][]string{}
	for _, subject := range []string{abi.SubjectStatefulSet, abi.SubjectPersistentVolume} {
		g := &keyGuest{subject: subject, keys: make(chan string, 16)}
		ctrl := controller.New(controller.Module{Runtime: g, Name: subject, Workers: 1}, controller.Deps{Lister: cache})
		_, err := controller.WireOne(cache, ctrl, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); ctrl.Run(runCtx) }()
		select {
		case k := <-g.keys:
			got[subject] = append(got[subject], k)
		case <-ctx.Done():
			t.Fatalf("%s: no key queued", subject)
		}
		stop()
		<-done
	}
	require.Equal(t, map[string][]string{abi.SubjectStatefulSet: {"default/web"}, abi.SubjectPersistentVolume: {"pv-1"}}, got)
}
