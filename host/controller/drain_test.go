package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// heldLister holds the reconcile of one StatefulSet while it builds the
// input, as a slow guest would hold it, until release is closed.
type heldLister struct {
	snapshot.Lister
	name    string
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (l *heldLister) GetObject(kind, ns, name string) (runtime.Object, error) {
	if kind == abi.KindStatefulSet && name == l.name {
		l.once.Do(func() { close(l.entered) })
		<-l.release
	}
	return l.Lister.GetObject(kind, ns, name)
}

// TestRunDrainsReconcilesInFlight: when Run's context ends, the reconcile in
// flight finishes and its action is executed before Run returns; a key
// still queued is left for the next start.
func TestRunDrainsReconcilesInFlight(t *testing.T) {
	c := newCluster(t, set("default", "web", nil), set("default", "db", nil))
	l := &heldLister{Lister: c, name: "web", entered: make(chan struct{}), release: make(chan struct{})}
	ctrl := controller.New(controller.Module{Runtime: warnretain(t), Name: "warn", Workers: 1},
		controller.Deps{Lister: l, Cluster: c})
	ctrl.Enqueue("default/web")
	ctrl.Enqueue("default/db")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctrl.Run(ctx) }()
	select {
	case <-l.entered:
	case <-time.After(testTimeout):
		t.Fatal("web was never reconciled")
	}
	cancel()
	select {
	case <-done:
		t.Fatal("Run returned while web's reconcile was in flight")
	default:
	}
	close(l.release)
	<-done

	events := c.Events()
	require.Len(t, events, 1, "web's event, and none for db, which was still queued at shutdown")
	require.Equal(t, "web", events[0].InvolvedObject.Name)
}
