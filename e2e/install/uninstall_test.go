package install

import (
	"context"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	"github.com/kubeplug/kubeplug/host/webhookcert"
)

var claimUpdates = schema.GroupVersionResource{Group: "kubeplug.dev", Version: "v1alpha1", Resource: "volumeclaimupdates"}

// ownedByTheInstall checks that the objects the host created for itself,
// its leader Lease and (with the webhook) its certificate's Secret, carry an
// owner reference to its Deployment: what lets the garbage collector remove
// them with the install.
func ownedByTheInstall(t *testing.T, in installed) {
	t.Helper()
	ctx := t.Context()
	c := cp.Client()
	d := deploymentOf(t, in)
	owned := func(kind, name string, refs []metav1.OwnerReference) {
		t.Helper()
		if !slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool {
			return r.Kind == "Deployment" && r.Name == d.Name && r.UID == d.UID
		}) {
			t.Errorf("%s %s/%s: owner references %v, want the Deployment %s's", kind, in.namespace, name, refs, d.Name)
		}
	}
	testenv.Eventually(t, wait, "the host's Lease "+in.lease, func() (bool, error) {
		_, err := c.CoordinationV1().Leases(in.namespace).Get(ctx, in.lease, metav1.GetOptions{})
		return err == nil, nil
	})
	l, err := c.CoordinationV1().Leases(in.namespace).Get(ctx, in.lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned("Lease", in.lease, l.OwnerReferences)
	if in.webhook != nil {
		s, err := c.CoreV1().Secrets(in.namespace).Get(ctx, in.webhook.secret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owned("Secret", in.webhook.secret, s.OwnerReferences)
	}
}

// uninstall removes what objs installed, as `kubectl delete -k` and `helm
// uninstall` do (each object deleted, dependents in the background; Helm
// leaves what its crds/ installed, kubectl deletes whatever the
// kustomization holds), and shows
// what stays and what goes: a VolumeClaimUpdate made before stays, with its
// CRD; the host's Lease and Secret go, and no object the host labelled as
// its own is left in its namespace.
func uninstall(t *testing.T, in installed, work string) {
	t.Helper()
	ctx := t.Context()
	c := cp.Client()
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	vcu := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeplug.dev/v1alpha1", "kind": "VolumeClaimUpdate",
		"metadata": map[string]any{"name": "keep-me", "namespace": work},
		"spec": map[string]any{"statefulSetName": "web", "volumeClaimTemplates": []any{map[string]any{
			"metadata": map[string]any{"name": "data"},
			"spec":     map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "2Gi"}}},
		}}},
	}}
	made, err := dyn.Resource(claimUpdates).Namespace(work).Create(ctx, vcu, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cp.Config)))
	bg := metav1.DeletePropagationBackground
	for _, o := range in.objs {
		if in.helm && o.GetKind() == "CustomResourceDefinition" {
			continue // Helm never deletes what crds/ installed
		}
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatal(err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if err := ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}

	gone := func(what string, get func(context.Context) error) {
		t.Helper()
		testenv.Eventually(t, wait, what+" to go with the install", func() (bool, error) {
			err := get(ctx)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	}
	gone("Lease "+in.lease, func(ctx context.Context) error {
		_, err := c.CoordinationV1().Leases(in.namespace).Get(ctx, in.lease, metav1.GetOptions{})
		return err
	})
	if in.webhook != nil {
		gone("Secret "+in.webhook.secret, func(ctx context.Context) error {
			_, err := c.CoreV1().Secrets(in.namespace).Get(ctx, in.webhook.secret, metav1.GetOptions{})
			return err
		})
	}
	secrets, err := c.CoreV1().Secrets(in.namespace).List(ctx, metav1.ListOptions{LabelSelector: webhookcert.LabelKey + "=" + webhookcert.LabelValue})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if s.DeletionTimestamp == nil {
			t.Errorf("Secret %s/%s of the host's is left after the uninstall", s.Namespace, s.Name)
		}
	}

	if _, err := c.Discovery().ServerResourcesForGroupVersion(claimUpdates.GroupVersion().String()); err != nil {
		t.Fatalf("the VolumeClaimUpdate CRD went with the install: %v", err)
	}
	kept, err := dyn.Resource(claimUpdates).Namespace(work).Get(ctx, "keep-me", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("VolumeClaimUpdate %s/keep-me went with the install: %v", work, err)
	}
	if kept.GetUID() != made.GetUID() || kept.GetDeletionTimestamp() != nil {
		t.Fatalf("VolumeClaimUpdate %s/keep-me was replaced or is being deleted", work)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(claimUpdates).Namespace(work).Delete(context.Background(), "keep-me", metav1.DeleteOptions{})
	})
}
