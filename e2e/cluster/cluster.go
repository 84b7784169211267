package cluster

import (
	"context"
	"fmt"
	"net/url"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/kubelet"
	"github.com/kubeplug/kubeplug/e2e/internal/manifests"
	"github.com/kubeplug/kubeplug/e2e/internal/podrun"
)

// Controllers are the kube-controller-manager controllers the cluster
// runs: those an install needs (Deployments and their ReplicaSets, the
// PodDisruptionBudget's status, a namespace's deletion, every namespace's
// default ServiceAccount), and those kubeplug's reference policies work
// beside (the garbage collector, StatefulSets, volume binding and
// protection).
var Controllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"disruption-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"garbage-collector-controller",
	"statefulset-controller",
	"persistentvolume-binder-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
}

// Options say what to start.
type Options struct {
	// Image is an OCI layout directory (make image's build/image/oci)
	// whose images the node holds, each under the name the layout gives
	// it. The layout's image (when it has one) is also tagged with the
	// names of its repository that this checkout's installs give their
	// pods (deploy/'s images:, the chart's appVersion), as docker tag
	// would: the node runs the checkout's build where its install names
	// the release. Empty: the node holds no image.
	Image string
	// Dir holds the pods' root filesystems; empty: a temporary directory,
	// removed by Stop.
	Dir string
	// LogDir, when set, receives each pod's log as NAMESPACE_NAME_UID.log
	// (podrun.Options.LogDir); it is made when missing.
	LogDir string
	// ComponentLogs keeps the components' own logs on standard error.
	ComponentLogs bool
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
}

// Cluster is a running cluster.
type Cluster struct {
	*controlplane.ControlPlane
	// Kubelet is the node's stand-in, and Runtime its container runtime.
	Kubelet *kubelet.Kubelet
	Runtime *podrun.Runtime

	dir  string // removed by Stop, when Start made it
	stop []func()
}

// Start starts the control plane, the node, and serves every namespace's
// pods, present and future, on the node. Stop stops it all.
func Start(ctx context.Context, o Options) (c *Cluster, err error) {
	var also []string
	if o.Image != "" {
		if also, err = installImages(); err != nil {
			return nil, err
		}
	}
	images, err := nodeImages(o.Image, also)
	if err != nil {
		return nil, err
	}
	c = &Cluster{}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if o.Dir == "" {
		if o.Dir, err = os.MkdirTemp("", "kubeplug-cluster-pods-"); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		c.dir = o.Dir
	}
	if o.LogDir != "" {
		if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{Controllers: Controllers, ComponentLogs: o.ComponentLogs, Logf: o.Logf})
	if err != nil {
		return nil, err
	}
	c.ControlPlane = cp
	c.stop = append(c.stop, cp.Stop)
	server, err := url.Parse(cp.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("cluster: the API server's address: %w", err)
	}
	client := cp.Client()
	c.Runtime = podrun.New(podrun.Options{
		Images: images, Client: client,
		Host: server.Hostname(), Port: server.Port(), CA: cp.ServingCA,
		Dir: o.Dir, LogDir: o.LogDir, OwnNetwork: true,
	})
	c.stop = append(c.stop, c.Runtime.StopAll)
	if c.Kubelet, err = kubelet.Start(ctx, client, ""); err != nil {
		return nil, err
	}
	c.stop = append(c.stop, c.Kubelet.Stop)
	return c, c.serveNamespaces(ctx)
}

// serveNamespaces has the node run the pods of every namespace, as a
// node runs whatever the scheduler gives it.
func (c *Cluster) serveNamespaces(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(c.Client(), 0)
	_, err := f.Core().V1().Namespaces().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if ns, ok := obj.(*corev1.Namespace); ok {
				c.Kubelet.ServeWith(ns.Name, c.Runtime)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("cluster: watch namespaces: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.Start(runCtx.Done())
	c.stop = append(c.stop, func() { cancel(); f.Shutdown() })
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cluster: the cache of %v did not sync", typ)
		}
	}
	return nil
}

// Stop stops the node's pods, the node and the control plane, newest
// first, and removes the pods' directory when Start made it.
func (c *Cluster) Stop() {
	for i := len(c.stop) - 1; i >= 0; i-- {
		c.stop[i]()
	}
	c.stop = nil
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
}

// Images are the image names the node holds, sorted.
func (c *Cluster) Images() []string { return c.Runtime.Names() }

// nodeImages reads the images of the layout in dir, each under its name
// and, for the layout's one image, under each name in also of the same
// repository: what docker tag would add.
func nodeImages(dir string, also []string) (map[string]v1.Image, error) {
	out := map[string]v1.Image{}
	if dir == "" {
		return out, nil
	}
	imgs, err := podrun.ReadLayout(dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	for _, img := range imgs {
		out[img.Name] = img.Image
	}
	if len(imgs) != 1 {
		return out, nil
	}
	built, err := name.ParseReference(imgs[0].Name)
	if err != nil {
		return nil, fmt.Errorf("cluster: image %s of %s: %w", imgs[0].Name, dir, err)
	}
	for _, n := range also {
		if ref, err := name.ParseReference(n); err == nil && ref.Context() == built.Context() {
			out[n] = imgs[0].Image
		}
	}
	return out, nil
}

// installImages are the images of the Deployments this checkout installs:
// the kustomize base's (deploy/) and the chart's with its default values.
func installImages() ([]string, error) {
	_, base, err := manifests.Kustomize("deploy")
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	_, chart, err := manifests.Helm(manifests.Release{Name: "kubeplug", Namespace: "kubeplug-system"})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	var out []string
	for _, o := range append(base, chart...) {
		if o.GetKind() != "Deployment" {
			continue
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				if img, ok := m["image"].(string); ok {
					out = append(out, img)
				}
			}
		}
	}
	return out, nil
}
