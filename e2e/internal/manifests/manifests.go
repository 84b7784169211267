package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// KubeVersion is the Kubernetes version charts are rendered and linted
// for: the e2e control plane's.
const KubeVersion = "v1.37.1"

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// ChartDir is charts/kubeplug.
func ChartDir() string { return filepath.Join(Root(), "charts", "kubeplug") }

// Release names a chart install.
type Release struct {
	Name, Namespace string
	// Values override the chart's values.yaml, as helm install --values.
	Values map[string]any
}

// Helm renders the chart as `helm install --dry-run` does, without a
// cluster, CRDs first, and returns the manifest and its objects.
func Helm(r Release) (string, []*unstructured.Unstructured, error) {
	chrt, err := loader.Load(ChartDir())
	if err != nil {
		return "", nil, fmt.Errorf("load chart %s: %w", ChartDir(), err)
	}
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return "", nil, err
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.ClientOnly, install.DryRun, install.IncludeCRDs = true, true, true
	install.ReleaseName, install.Namespace, install.KubeVersion = r.Name, r.Namespace, kv
	rel, err := install.Run(chrt, r.Values)
	if err != nil {
		return "", nil, fmt.Errorf("render chart %s: %w", ChartDir(), err)
	}
	objs, err := Decode(rel.Manifest)
	if err != nil {
		return "", nil, fmt.Errorf("chart %s: %w", ChartDir(), err)
	}
	return rel.Manifest, objs, nil
}

// Lint runs helm lint on the chart with values and returns every message
// of severity warning or error.
func Lint(namespace string, values map[string]any) []support.Message {
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return []support.Message{support.NewMessage(support.ErrorSev, "", err)}
	}
	var out []support.Message
	for _, m := range lint.AllWithKubeVersion(ChartDir(), values, namespace, kv).Messages {
		if m.Severity >= support.WarningSev {
			out = append(out, m)
		}
	}
	return out
}

// Kustomize builds the kustomization in dir (relative to the repository
// root, e.g. "deploy" or "deploy/overlays/webhook") as kubectl's built-in
// kustomize does.
func Kustomize(dir string) (string, []*unstructured.Unstructured, error) {
	path := filepath.Join(Root(), dir)
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), path)
	if err != nil {
		return "", nil, fmt.Errorf("kustomize build %s: %w", path, err)
	}
	b, err := m.AsYaml()
	if err != nil {
		return "", nil, fmt.Errorf("kustomize build %s: %w", path, err)
	}
	objs, err := Decode(string(b))
	if err != nil {
		return "", nil, fmt.Errorf("kustomize build %s: %w", path, err)
	}
	return string(b), objs, nil
}

// Decode splits a multi-document YAML manifest into objects, skipping
// empty documents.
func Decode(manifest string) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewBufferString(manifest)))
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}

// Find returns the object of kind and name in objs, or nil.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}
