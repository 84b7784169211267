package demo

import (
	"context"
	"sync"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/controller/statefulset"
)

// startSetController runs kube-controller-manager's StatefulSet controller,
// its own code, in this process on namespace ns alone. The demo's
// controller manager runs none: the retention scenes play that controller's
// part with setctl, so that every owner reference they show is the retention
// module's. A rolling update is another matter: only the real controller
// shows that the partition the module holds is the one it obeys.
func startSetController(ctx context.Context, c kubernetes.Interface, ns string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	f := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(ns))
	ssc := statefulset.NewStatefulSetController(ctx,
		f.Core().V1().Pods(), f.Apps().V1().StatefulSets(),
		f.Core().V1().PersistentVolumeClaims(), f.Apps().V1().ControllerRevisions(), c)
	f.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { ssc.Run(ctx, 1) })
	return func() {
		cancel()
		wg.Wait()
		f.Shutdown()
	}
}
