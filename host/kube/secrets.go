package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SecretGetter returns a function that reads a Secret's data from the API
// server, for CSI calls that need the provisioner's secrets. It reads
// directly rather than through an informer: the host needs a Secret only
// when it deletes a volume, and watching every Secret of a cluster would
// need far wider rights.
func SecretGetter(client kubernetes.Interface) func(ctx context.Context, namespace, name string) (map[string]string, error) {
	return func(ctx context.Context, namespace, name string) (map[string]string, error) {
		s, err := client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("get secret %s/%s: %w", namespace, name, err)
		}
		data := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, nil
	}
}
