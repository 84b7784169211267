package kube

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
)

// ErrNoCluster is returned by RESTConfig when nothing names a cluster.
var ErrNoCluster = errors.New("no cluster to connect to")

// RESTConfig finds the API server and credentials as kubectl and
// controller-runtime do, in this order:
//
//  1. the kubeconfig file given (--kubeconfig);
//  2. the files $KUBECONFIG lists (separated by the OS's path list
//     separator, merged as kubectl merges them);
//  3. the in-cluster configuration (a pod's service account), when neither
//     is given and no context is asked for;
//  4. ~/.kube/config.
//
// context, when not empty, picks a context of the kubeconfig instead of its
// current-context. The in-cluster configuration comes before ~/.kube/config
// as in controller-runtime's GetConfig: a pod never reaches a cluster named
// by a file that happens to be in its home directory. It logs nothing (unlike
// clientcmd.BuildConfigFromFlags, whose klog warnings name flags kubeplug
// does not have).
func RESTConfig(kubeconfig, context string) (*rest.Config, error) {
	if kubeconfig == "" && context == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		if c, err := rest.InClusterConfig(); err == nil {
			return c, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	// clientcmd fixes ~/.kube/config when the process starts; the home
	// directory of now is the one kubectl would read.
	home := filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		rules.Precedence = []string{home}
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	c, err := cc.ClientConfig()
	switch {
	case err == nil:
		return c, nil
	case clientcmd.IsEmptyConfig(err):
		return nil, fmt.Errorf("%w: give --kubeconfig, set KUBECONFIG, or write %s; in a pod, the service account's "+
			"token is read from /var/run/secrets/kubernetes.io/serviceaccount with $KUBERNETES_SERVICE_HOST and "+
			"$KUBERNETES_SERVICE_PORT, and they are not all there", ErrNoCluster, home)
	case kubeconfig != "":
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	case os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		return nil, fmt.Errorf("kubeconfig from $KUBECONFIG (%s): %w", os.Getenv(clientcmd.RecommendedConfigPathEnvVar), err)
	}
	return nil, fmt.Errorf("kubeconfig %s: %w", home, err)
}
