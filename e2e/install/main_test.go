// Package install installs kubeplug as a user does, from the Helm chart
// (rendered with the Helm v3 SDK) and from the kustomize base (rendered with
// the kustomize API), into a real kube-apiserver with Pod Security
// "restricted" enforced on the host's namespace, and runs the host from
// what was installed: kube-controller-manager's Deployment and ReplicaSet
// controllers make its pod, the kubelet stand-in with e2e/internal/podrun
// runs the pod's container from the image `make image` built (its
// entrypoint, args, env, ConfigMap volume and service-account token, as the
// image's user in its root filesystem), and the host reaches the API server
// through client-go's in-cluster configuration as the installed
// ServiceAccount, so RBAC is the API server's.
package install

import (
	"os"
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
		}},
	}))
}
