package app

import (
	"context"
	"log/slog"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeplug/kubeplug/host/kube"
)

// installOwner returns the Deployment the host runs in (kube.InstallOwner),
// when it makes objects of its own (a leader Lease, a webhook certificate's
// Secret) and runs in a pod (POD_NAMESPACE and POD_NAME, from the downward
// API): those objects then belong to it, and removing the install removes
// them. A host that cannot tell runs all the same, and says what an
// uninstall leaves behind. Its reads take at most timeout, the bound of
// every API call the host makes outside its watches: client has none.
func installOwner(ctx context.Context, opts Options, client kubernetes.Interface, timeout time.Duration, log *slog.Logger) *kube.Owner {
	if opts.LeaderElection == nil && opts.WebhookCert == nil {
		return nil
	}
	ns, pod := os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME")
	if ns == "" || pod == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	o, err := kube.InstallOwner(ctx, client, ns, pod)
	if err != nil {
		log.Warn("the host's Lease and webhook certificate Secret belong to no Deployment: delete them by hand after an uninstall", "err", err)
		return nil
	}
	log.Info("the host's Lease and webhook certificate Secret belong to its Deployment: removing it removes them",
		"deployment", o.Namespace+"/"+o.Ref.Name)
	return o
}
