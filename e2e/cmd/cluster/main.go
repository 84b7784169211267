// Command cluster is `make cluster`: a one-node cluster started in this
// process (e2e/cluster) and kept running until Ctrl-C, with a kubeconfig
// written for kubectl, helm and kubeplug run. Its node runs the pods of
// kubeplug's image (make image's build/image/oci) as processes, so that
// kubeplug installs on it as the README shows: kubectl apply -k deploy/ or
// helm install.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kubeplug/kubeplug/e2e/cluster"
	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

func main() {
	root := testenv.Root()
	kubeconfig := flag.String("kubeconfig", filepath.Join(root, "build", "cluster", "kubeconfig"), "where to write the kubeconfig")
	image := flag.String("image", filepath.Join(root, "build", "image", "oci"), "OCI layout of the images the node holds (make image writes it); empty: none")
	logs := flag.Bool("component-logs", false, "show the components' own logs on standard error")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *image, *logs); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, image string, logs bool) error {
	if uid := os.Geteuid(); uid != 0 {
		fmt.Printf("running as uid %d: the node needs root to run pods (chroot, their users, their network namespaces),\n"+
			"so every pod will wait with CreateContainerError. Run make cluster as root to install kubeplug on it.\n", uid)
	}
	// The last run's pod logs go: they are this run's place.
	podLogs := filepath.Join(filepath.Dir(kubeconfig), "logs")
	if err := os.RemoveAll(podLogs); err != nil {
		return err
	}
	fmt.Println("starting etcd, kube-apiserver, kube-controller-manager and a node in this process...")
	c, err := cluster.Start(ctx, cluster.Options{Image: image, LogDir: podLogs, ComponentLogs: logs})
	if err != nil {
		return err
	}
	defer c.Stop()

	b, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(kubeconfig), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, b, 0o600); err != nil {
		return err
	}
	images := "none (-image is empty)"
	if len(c.Images()) > 0 {
		images = strings.Join(c.Images(), ", ") + " (from " + image + ")"
	}
	fmt.Printf(`
The cluster is up at %s:
  kube-apiserver %s with RBAC and Pod Security admission,
  kube-controller-manager running %s,
  and one node, %s, whose stand-in kubelet runs each pod as a process
  in a network namespace of its own, from the images it holds:
  %s.
  It pulls no image: a pod of any other image stays Pending (ErrImageNeverPull).
  The pods' logs are in %s/NAMESPACE_POD_UID.log
  (it serves no kubelet API: no kubectl logs, exec or port-forward).

Use it (README.md, "Install on make cluster, step by step"):
  export KUBECONFIG=%s
  kubectl get nodes
  kubectl apply -k deploy/
  kubectl -n kubeplug-system get pods -w

Press Ctrl-C to stop; everything but the kubeconfig and the logs is removed.
`, c.Config.Host, controlplane.Version, wrap(strings.Join(cluster.Controllers, ", "), 60, "    "), c.Kubelet.Node(), images, podLogs, kubeconfig)
	<-ctx.Done()
	fmt.Println("\nstopping the cluster")
	return nil
}

// wrap breaks s between words into lines of at most width bytes (a
// longer word stays whole), each after the first starting with indent.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(s) {
		switch {
		case i == 0:
		case line+1+len(word) > width:
			b.WriteString("\n" + indent)
			line = 0
		default:
			b.WriteString(" ")
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}
