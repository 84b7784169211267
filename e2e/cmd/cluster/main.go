// Command cluster is `make cluster`: the embedded control plane the tests
// and the demo use — etcd, kube-apiserver, kube-controller-manager with the
// controllers kubeplug's policies meet, and a stand-in for a node's kubelet
// that runs every pod — started in this process and kept running until
// Ctrl-C, with a kubeconfig written for kubectl and kubeplug run.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// controllers are kube-controller-manager's controllers that the reference
// modules work beside.
var controllers = []string{
	"garbage-collector-controller",
	"statefulset-controller",
	"persistentvolume-binder-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
}

func main() {
	root := testenv.Root()
	kubeconfig := flag.String("kubeconfig", filepath.Join(root, "build", "cluster", "kubeconfig"), "where to write the kubeconfig")
	logs := flag.Bool("component-logs", false, "show the components' own logs on standard error")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, root, *kubeconfig, *logs); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root, kubeconfig string, logs bool) error {
	fmt.Println("starting etcd, kube-apiserver and kube-controller-manager in this process...")
	cp, err := controlplane.Start(ctx, controlplane.Options{Controllers: controllers, ComponentLogs: logs})
	if err != nil {
		return err
	}
	defer cp.Stop()
	client := cp.Client()

	crd := filepath.Join(root, "deploy", "crds", "volumeclaimupdate-crd.yaml")
	if err := testenv.InstallCRDs(ctx, cp.Config, crd); err != nil {
		return err
	}

	// One node, whose kubelet runs the pods of every namespace.
	kl, err := kubelet.Start(ctx, client, "")
	if err != nil {
		return err
	}
	defer kl.Stop()
	f := informers.NewSharedInformerFactory(client, 0)
	_, err = f.Core().V1().Namespaces().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if ns, ok := obj.(*corev1.Namespace); ok {
				kl.Serve(ns.Name)
			}
		},
	})
	if err != nil {
		return err
	}
	f.Start(ctx.Done())
	defer f.Shutdown()

	b, err := os.ReadFile(cp.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(kubeconfig), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, b, 0o600); err != nil {
		return err
	}
	fmt.Printf(`
The control plane is up at %s:
  kube-apiserver 1.37 with RBAC, kube-controller-manager running %d controllers
  (garbage collector, StatefulSets, volume binding and protection),
  one node (%s) whose stand-in kubelet runs every pod, and the
  VolumeClaimUpdate CRD (deploy/crds/volumeclaimupdate-crd.yaml) installed.

Use it:
  export KUBECONFIG=%s
  kubectl get nodes,namespaces
  build/kubeplug run --config host.yaml --kubeconfig $KUBECONFIG

Pods run without containers; claims bind to PersistentVolumes you create
(the binder runs, no provisioner does). Press Ctrl-C to stop; everything is
removed.
`, cp.Config.Host, len(controllers), kl.Node(), kubeconfig)
	<-ctx.Done()
	fmt.Println("\nstopping the control plane")
	return nil
}
