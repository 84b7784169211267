package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	strictFile = "storagepolicy-strict.yaml"
	// setLabel is the label storagepolicy puts on a claim of a set's
	// template (examples/storagepolicy).
	setLabel = "storagepolicy.example.com/statefulset"
	// refusal is part of storagepolicy's message when it refuses a set.
	refusal = "would keep its PersistentVolumeClaims forever"
)

// strictObjects are examples/demo/storagepolicy-strict.yaml.
type strictObjects struct {
	ns               *corev1.Namespace
	archive, scratch *appsv1.StatefulSet
}

func readStrict(root string) (*strictObjects, error) {
	b, err := os.ReadFile(filepath.Join(root, "examples", "demo", strictFile))
	if err != nil {
		return nil, err
	}
	o := &strictObjects{ns: &corev1.Namespace{}, archive: &appsv1.StatefulSet{}, scratch: &appsv1.StatefulSet{}}
	docs := strings.Split(string(b), "\n---\n")
	into := []any{o.ns, o.archive, o.scratch}
	if len(docs) != len(into) {
		return nil, fmt.Errorf("examples/demo/%s: %d documents, want %d", strictFile, len(docs), len(into))
	}
	for i, doc := range docs {
		if err := yaml.UnmarshalStrict([]byte(doc), into[i]); err != nil {
			return nil, fmt.Errorf("examples/demo/%s, document %d: %w", strictFile, i+1, err)
		}
	}
	return o, nil
}

// admitStorage: the storagepolicy example module, served by the host as an
// admission webhook that kube-apiserver calls, refuses a StatefulSet that
// would keep its claims forever in a strict namespace, admits one that
// does not, and labels the claims made for the admitted set's template.
func admitStorage(ctx context.Context, d *demo) error {
	o, err := readStrict(d.Root)
	if err != nil {
		return err
	}
	d.n.say("The host serves the admit hooks of its modules over HTTPS (kubeplug run --webhook-addr), and")
	d.n.say("kubeplug webhook-config registered them with kube-apiserver (webhook configurations %s).", strings.Join(d.webhooks, ", "))
	if _, err := d.client.CoreV1().Namespaces().Create(ctx, o.ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	d.n.step("created namespace %s, labelled storage-policy=%s", o.ns.Name, o.ns.Labels["storage-policy"])

	// The module reads the namespace's labels from the host's own cache:
	// a server-side dry run goes through the webhooks like a real create
	// and stores nothing, so the demo asks until the host has seen the
	// label, then creates for real.
	sets := d.client.AppsV1().StatefulSets(o.ns.Name)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	err = d.await(ctx, "the host to see namespace "+o.ns.Name, func(ctx context.Context) (bool, error) {
		_, err := sets.Create(ctx, o.archive, dryRun)
		return err != nil && strings.Contains(err.Error(), refusal), nil
	})
	if err != nil {
		return err
	}
	_, err = sets.Create(ctx, o.archive, metav1.CreateOptions{})
	if err == nil || !apierrors.IsForbidden(err) {
		return fmt.Errorf("creating StatefulSet %s: got %v, want the module's refusal", o.archive.Name, err)
	}
	d.n.step("kubectl apply of StatefulSet %s (no persistentVolumeClaimRetentionPolicy): refused by kube-apiserver:", o.archive.Name)
	d.n.say("%s", err)

	if _, err := sets.Create(ctx, o.scratch, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating StatefulSet %s: %w", o.scratch.Name, err)
	}
	d.n.step("StatefulSet %s (whenDeleted: Delete) admitted", o.scratch.Name)

	// The claim the StatefulSet controller would make for replica 0. The
	// module finds the set in the host's caches: it labels the claim once
	// the host has seen the set.
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-" + o.scratch.Name + "-0", Namespace: o.ns.Name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
	}
	claims := d.client.CoreV1().PersistentVolumeClaims(o.ns.Name)
	err = d.await(ctx, "the host to see StatefulSet "+o.scratch.Name, func(ctx context.Context) (bool, error) {
		got, err := claims.Create(ctx, claim, dryRun)
		return err == nil && got.Labels[setLabel] == o.scratch.Name, nil
	})
	if err != nil {
		return err
	}
	got, err := claims.Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if got.Labels[setLabel] != o.scratch.Name {
		return fmt.Errorf("claim %s created with labels %v, want %s=%s", got.Name, got.Labels, setLabel, o.scratch.Name)
	}
	d.n.step("created claim %s with no labels; kube-apiserver stored it with %s=%s", got.Name, setLabel, got.Labels[setLabel])
	d.n.say("The module's patch touched /metadata/labels only, the one path its allow: grants; the host applied it,")
	d.n.say("checked the result against the grant, and answered kube-apiserver with the patch.")
	return nil
}
