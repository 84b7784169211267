package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// ClaimUpdateCRD is the absolute path of deploy/crds/volumeclaimupdate-crd.yaml,
// the VolumeClaimUpdate CustomResourceDefinition the templateupdate module
// acts on.
func ClaimUpdateCRD() string {
	return filepath.Join(Root(), "deploy", "crds", "volumeclaimupdate-crd.yaml")
}

// crdWait bounds how long InstallCRDs waits for one CRD to be Established
// and served.
const crdWait = 60 * time.Second

// InstallCRDs creates, or updates when they exist, the
// CustomResourceDefinitions in files (YAML, one or more documents each), and
// waits until each is Established and its resource is in discovery, so a
// host started after it returns finds the resource served. It fails on a
// document that is not a CustomResourceDefinition.
func InstallCRDs(ctx context.Context, cfg *rest.Config, files ...string) error {
	client, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("install CRDs: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("install CRDs: %w", err)
	}
	for _, file := range files {
		crds, err := readCRDs(file)
		if err != nil {
			return err
		}
		for _, crd := range crds {
			if err := installCRD(ctx, client, crd); err != nil {
				return fmt.Errorf("install CRD %s from %s: %w", crd.Name, file, err)
			}
			if err := waitCRD(ctx, client, disc, crd); err != nil {
				return fmt.Errorf("install CRD %s from %s: %w", crd.Name, file, err)
			}
		}
	}
	return nil
}

// readCRDs decodes every document of file as a CustomResourceDefinition.
func readCRDs(file string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("install CRDs: %w", err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var crds []*apiextensionsv1.CustomResourceDefinition
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("install CRDs: %s: document %d: %w", file, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var typ metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &typ); err != nil {
			return nil, fmt.Errorf("install CRDs: %s: document %d: %w", file, i, err)
		}
		if typ == (metav1.TypeMeta{}) {
			continue // a document of comments only
		}
		if typ.APIVersion != "apiextensions.k8s.io/v1" || typ.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("install CRDs: %s: document %d is %s %s, not an apiextensions.k8s.io/v1 CustomResourceDefinition", file, i, typ.APIVersion, typ.Kind)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("install CRDs: %s: document %d: %w", file, i, err)
		}
		crds = append(crds, crd)
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("install CRDs: %s holds no CustomResourceDefinition", file)
	}
	return crds, nil
}

// installCRD creates crd, or replaces the spec of the one of its name.
func installCRD(ctx context.Context, client apiextensions.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	_, err := crds.Create(ctx, crd, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdWait, true, func(ctx context.Context) (bool, error) {
		cur, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cur.Spec = crd.Spec
		cur.Labels, cur.Annotations = crd.Labels, crd.Annotations
		_, err = crds.Update(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// waitCRD waits until crd is Established (and not refused for a name
// conflict) and discovery lists its resource in every served version.
func waitCRD(ctx context.Context, client apiextensions.Interface, disc discovery.DiscoveryInterface, crd *apiextensionsv1.CustomResourceDefinition) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdWait, true, func(ctx context.Context) (bool, error) {
		cur, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		established := false
		for _, c := range cur.Status.Conditions {
			switch {
			case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
				established = true
			case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
				return false, fmt.Errorf("names not accepted: %s", c.Message)
			}
		}
		if !established {
			last = "not Established yet"
			return false, nil
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := crd.Spec.Group + "/" + v.Name
			list, err := disc.ServerResourcesForGroupVersion(gv)
			if err != nil {
				last = fmt.Sprintf("%s not in discovery yet: %v", gv, err)
				return false, nil
			}
			found := false
			for _, r := range list.APIResources {
				found = found || r.Name == crd.Spec.Names.Plural
			}
			if !found {
				last = fmt.Sprintf("%s/%s not in discovery yet", gv, crd.Spec.Names.Plural)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil && last != "" {
		return fmt.Errorf("%w (%s)", err, last)
	}
	return err
}
