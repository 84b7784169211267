// Package install installs kubeplug as a user does, from the Helm chart
// (rendered with the Helm v3 SDK) and from the kustomize base (rendered with
// the kustomize API, its CRDs from deploy/crds first), into a real
// kube-apiserver with Pod Security "restricted" enforced on the host's
// namespace, runs the host from what was installed beside
// kube-controller-manager's StatefulSet controller and garbage collector,
// and uninstalls it as kubectl delete -k and helm uninstall do.
// kube-controller-manager's Deployment and ReplicaSet controllers make its
// pod, the kubelet stand-in with e2e/internal/podrun
// runs the pod's container from the image `make image` built (its
// entrypoint, args, env, ConfigMap volume and service-account token, as the
// image's user in its root filesystem), and the host reaches the API server
// through client-go's in-cluster configuration as the installed
// ServiceAccount, so RBAC is the API server's. The API server calls the
// webhook the chart registers by Service at the loopback port the pod's
// process listens on (no kube-proxy runs here): resolveService.
package install

import (
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/kubeplug/kubeplug/e2e/controlplane"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &cp, testenv.MainOptions{
		ControlPlane: controlplane.Options{Controllers: []string{
			"deployment-controller",
			"replicaset-controller",
			"persistentvolume-binder-controller",
			// KEP-1847 as kube-controller-manager runs it, beside the
			// default install's retention in shadow mode; and what
			// removes the host's Lease and Secret with its Deployment.
			"statefulset-controller",
			"garbage-collector-controller",
			"persistentvolumeclaim-protection-controller",
		}, ServiceResolver: resolveService},
	}))
}

// services maps NAMESPACE/NAME of a webhook Service to the loopback
// address of the pod process behind it.
var services sync.Map

// resolveService is where kube-apiserver sends a webhook call for a
// Service: the address a test stored for it, the port the pod's container
// listens on.
func resolveService(namespace, name string, _ int32) (*url.URL, error) {
	addr, ok := services.Load(namespace + "/" + name)
	if !ok {
		return nil, fmt.Errorf("service %s/%s: no test serves it", namespace, name)
	}
	return &url.URL{Scheme: "https", Host: addr.(string)}, nil
}
