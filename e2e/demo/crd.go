package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// TODO(issue 13): replace with testenv.InstallCRDs(ctx, cfg,
// testenv.ClaimUpdateCRD()) once e2e/internal/testenv/crd.go is on main.

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installClaimUpdateCRD creates the VolumeClaimUpdate CRD of
// deploy/volumeclaimupdate-crd.yaml and waits until discovery serves it: the
// host looks for the resource once, when it starts.
func installClaimUpdateCRD(ctx context.Context, cfg *rest.Config, root string) error {
	b, err := os.ReadFile(filepath.Join(root, "deploy", "volumeclaimupdate-crd.yaml"))
	if err != nil {
		return err
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &crd.Object); err != nil {
		return fmt.Errorf("deploy/volumeclaimupdate-crd.yaml: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		list, err := disc.ServerResourcesForGroupVersion(claimUpdateResource.GroupVersion().String())
		if err != nil {
			return false, nil
		}
		for _, r := range list.APIResources {
			if r.Name == claimUpdateResource.Resource {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not served: %w", crd.GetName(), err)
	}
	return nil
}
