package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/kube"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

func newRecordCommand(opts *globalOptions, s streams) *cobra.Command {
	var kubeconfig, kubecontext, subject, output, name string
	cmd := &cobra.Command{
		Use:   "record [--kubeconfig FILE] [--context NAME] --subject statefulset/NS/NAME|persistentvolume/NAME [-o FILE]",
		Short: "Write a test case holding what a module sees of one object on a live cluster",
		Long: `Record reads the cluster as the host does (the same informer caches and the same
snapshot builder) and writes a kubeplug test case holding exactly the objects the
input of one subject's reconcile is built from: a StatefulSet with its pods, its
claims, their StorageClasses and its VolumeClaimUpdate; or a PersistentVolume
with its bound claim and its StorageClass. Managed fields, resourceVersions,
kubectl's last-applied annotation and the status fields no module is given are
left out. The case has no expect: yet: add what the module should do, and run
it with kubeplug test. It finds the cluster as kubeplug run does (--kubeconfig,
$KUBECONFIG, in-cluster, ~/.kube/config; --context).`,
		Example: `  kubeplug record --context kind-dev --subject statefulset/default/web -o web.yaml
  kubeplug record --subject persistentvolume/pvc-1234 > pv.yaml`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, key, err := parseSubject(subject)
			if err != nil {
				return err
			}
			// client-go's log goes where the host's does.
			if _, err := opts.clientLogger(s.err, slog.LevelWarn); err != nil {
				return err
			}
			doc, err := record(cmd.Context(), kubeconfig, kubecontext, kind, key, name)
			if err != nil {
				return err
			}
			if output == "" || output == "-" {
				_, err = s.out.Write(doc)
				return err
			}
			if err := os.WriteFile(output, doc, 0o644); err != nil {
				return inputErrorf("write the case: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	addClusterFlags(f, &kubeconfig, &kubecontext)
	f.StringVar(&subject, "subject", "", "the subject to record: statefulset/NAMESPACE/NAME or persistentvolume/NAME; the type may also be named as kubectl names it (statefulsets, statefulsets.apps, StatefulSet) (required)")
	f.StringVarP(&output, "output", "o", "", "file to write the case to; default standard output")
	f.StringVar(&name, "name", "", "the case's name; default \"recorded <subject>\"")
	return cmd
}

// parseSubject reads --subject: TYPE/NAMESPACE/NAME for a namespaced
// subject, TYPE/NAME for a cluster-scoped one, where TYPE names a subject
// kind as its manifest does (statefulset), or as kubectl does: its resource
// (statefulsets), with its group (statefulsets.apps), or its kind
// (StatefulSet). It returns the subject and the object's cache key.
func parseSubject(s string) (subject, key string, err error) {
	typ, rest, _ := strings.Cut(s, "/")
	info, ok := subjectNamed(typ)
	if !ok {
		return "", "", inputErrorf("--subject %q: %q is not a subject kubeplug serves: want %s", s, typ, subjectForms())
	}
	parts := strings.Split(rest, "/")
	if abi.KindOf(info.Kind).Namespaced {
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return "", "", inputErrorf("--subject %q: a %s is namespaced: want %s/NAMESPACE/NAME", s, info.Kind, typ)
		}
		return string(info.Name), parts[0] + "/" + parts[1], nil
	}
	if len(parts) != 1 || parts[0] == "" {
		return "", "", inputErrorf("--subject %q: a %s is cluster-scoped: want %s/NAME", s, info.Kind, typ)
	}
	return string(info.Name), parts[0], nil
}

// subjectNamed returns the subject kind typ names: its manifest name, its
// kind, its resource, or its resource and group, in any case.
func subjectNamed(typ string) (abi.SubjectInfo, bool) {
	typ = strings.ToLower(typ)
	for _, name := range abi.Subjects() {
		info, _ := abi.Subject(name).Info()
		k := abi.KindOf(info.Kind)
		names := []string{name, strings.ToLower(info.Kind), k.Resource}
		if group, _, ok := strings.Cut(k.APIVersion, "/"); ok {
			names = append(names, k.Resource+"."+group)
		}
		if slices.Contains(names, typ) {
			return info, true
		}
	}
	return abi.SubjectInfo{}, false
}

// subjectForms lists --subject's forms, one per subject kind.
func subjectForms() string {
	var forms []string
	for _, name := range abi.Subjects() {
		info, _ := abi.Subject(name).Info()
		if abi.KindOf(info.Kind).Namespaced {
			forms = append(forms, name+"/NAMESPACE/NAME")
		} else {
			forms = append(forms, name+"/NAME")
		}
	}
	return strings.Join(forms, " or ")
}

// record builds the input of the reconcile of key as the host would and
// returns the case file of the objects it came from.
func record(ctx context.Context, kubeconfig, kubecontext, kind, key, name string) ([]byte, error) {
	rc, err := kube.RESTConfig(kubeconfig, kubecontext)
	if err != nil {
		return nil, inputError(err)
	}
	rc.UserAgent = "kubeplug-record"
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, inputErrorf("api client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, inputErrorf("api client: %w", err)
	}
	ns, _, _ := strings.Cut(key, "/")
	if kind == abi.SubjectPersistentVolume {
		ns = "" // the bound claim may be in any namespace
	}
	cache, err := kube.NewCache(client, dyn, kube.Options{Namespace: ns})
	if err != nil {
		return nil, failure(err)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cache.Start(cctx)
	defer func() { cancel(); cache.Shutdown() }()
	if !cache.WaitForSync(cctx) {
		return nil, failure(fmt.Errorf("read the cluster: the caches did not sync within a minute: %w", cctx.Err()))
	}
	now := time.Now().UTC().Truncate(time.Second)
	b := &snapshot.Builder{Lister: cache, Now: func() time.Time { return now }}
	req, err := b.Build(kind, key, nil)
	if err != nil {
		return nil, failure(err)
	}
	if req == nil {
		return nil, inputErrorf("%s %s does not exist", kind, key)
	}
	objs, err := inputObjects(cache, req)
	if err != nil {
		return nil, failure(err)
	}
	if name == "" {
		name = "recorded " + kind + " " + key
	}
	return yaml.Marshal(map[string]any{"name": name, "now": now.Format(time.RFC3339), "objects": objs})
}

// inputObjects returns, in the order the input lists them, the objects of
// the cache that req was built from, cleaned for a case file.
func inputObjects(l snapshot.Lister, req *abi.ReconcileRequest) ([]map[string]any, error) {
	var out []map[string]any
	for o := range req.Objects() {
		obj, err := l.GetObject(o.Kind, o.Meta.Namespace, o.Meta.Name)
		if err != nil {
			return nil, fmt.Errorf("read %s %s/%s: %w", o.Kind, o.Meta.Namespace, o.Meta.Name, err)
		}
		u, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("convert %s %s: %w", o.Kind, o.Meta.Name, err)
		}
		out = append(out, clean(o.Kind, u))
	}
	return out, nil
}

// statusFields are, by kind, the status fields the input's projection
// carries (abi's JSON names): the only ones a module is given.
var statusFields = map[string]reflect.Type{
	abi.KindStatefulSet:           reflect.TypeFor[abi.StatefulSetStatus](),
	abi.KindPod:                   reflect.TypeFor[abi.PodStatus](),
	abi.KindPersistentVolumeClaim: reflect.TypeFor[abi.PersistentVolumeClaimStatus](),
	abi.KindPersistentVolume:      reflect.TypeFor[abi.PersistentVolumeStatus](),
	abi.KindVolumeClaimUpdate:     reflect.TypeFor[abi.VolumeClaimUpdateStatus](),
}

// clean sets the object's apiVersion and kind, which listers' typed objects
// lack, and drops what is noise in a case file: managed fields, the
// resourceVersion and self link, kubectl's last-applied configuration, and
// status fields no module is given.
func clean(kind string, u map[string]any) map[string]any {
	u["apiVersion"], u["kind"] = abi.KindOf(kind).APIVersion, kind
	if md, ok := u["metadata"].(map[string]any); ok {
		for _, f := range []string{"managedFields", "resourceVersion", "selfLink"} {
			delete(md, f)
		}
		if a, ok := md["annotations"].(map[string]any); ok {
			delete(a, "kubectl.kubernetes.io/last-applied-configuration")
			if len(a) == 0 {
				delete(md, "annotations")
			}
		}
	}
	st, ok := u["status"].(map[string]any)
	if !ok {
		return u
	}
	keep := map[string]bool{}
	if t, ok := statusFields[kind]; ok {
		for f := range t.Fields() {
			if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n != "" {
				keep[n] = true
			}
		}
	}
	for k := range st {
		if !keep[k] {
			delete(st, k)
		}
	}
	if len(st) == 0 {
		delete(u, "status")
	}
	return u
}
