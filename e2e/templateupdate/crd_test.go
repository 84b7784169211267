package templateupdate

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

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
)

// TODO(issue 13): use testenv.InstallCRDs(ctx, cfg, testenv.ClaimUpdateCRD())
// once it is on main; this is a minimal copy so the package builds before.

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installClaimUpdateCRD creates deploy/volumeclaimupdate-crd.yaml and waits
// until discovery serves its resource: the host discovers it at start.
func installClaimUpdateCRD(ctx context.Context, cfg *rest.Config) error {
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "deploy", "volumeclaimupdate-crd.yaml"))
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		return fmt.Errorf("volumeclaimupdate-crd.yaml: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the VolumeClaimUpdate CRD: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		list, err := disc.ServerResourcesForGroupVersion(vcuGVR.GroupVersion().String())
		if err != nil {
			return false, nil
		}
		for _, r := range list.APIResources {
			if r.Name == vcuGVR.Resource {
				return true, nil
			}
		}
		return false, nil
	})
}
