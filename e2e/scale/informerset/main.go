// Command informerset is the reference BenchmarkScale measures the host
// against: the least any controller pays to list and watch the kinds a
// kubeplug host caches. It starts client-go's shared informers for
// StatefulSets, Pods, PersistentVolumeClaims, PersistentVolumes and
// StorageClasses, with no transform and no handler, prints "synced" once
// their caches have synced, and runs until SIGTERM or SIGINT.
//
//	informerset --kubeconfig FILE
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file of the API server")
	flag.Parse()
	if err := run(*kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "informerset:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	f := informers.NewSharedInformerFactory(client, 0)
	f.Apps().V1().StatefulSets().Informer()
	f.Core().V1().Pods().Informer()
	f.Core().V1().PersistentVolumeClaims().Informer()
	f.Core().V1().PersistentVolumes().Informer()
	f.Storage().V1().StorageClasses().Informer()
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("%v did not sync", typ)
		}
	}
	fmt.Println("synced")
	<-ctx.Done()
	f.Shutdown()
	return nil
}
