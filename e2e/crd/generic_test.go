package crd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/e2e/internal/testenv"
	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/kube"
)

// The writes of the generic actions (ABI 1.6) through kube.Cluster on the
// real API server, as host/memcluster's generic_test.go has them: a create
// is its manager's Update entry, which the same manager's unforced apply
// conflicts with, naming it; forced, the fields are the Apply entry's; a
// field another manager wrote conflicts unless forced; a uid keeps an
// apply from creating an object that is gone.
func TestGenericWritesAsMemcluster(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, cp.Client())
	yes := true
	budgets := abi.Resource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets", Kind: "PodDisruptionBudget", Namespaced: &yes}
	c := &kube.Cluster{Dynamic: dynamic.NewForConfigOrDie(cp.Config), Declared: func(kind string) (abi.Resource, bool) {
		return budgets, kind == budgets.Kind
	}}
	const manager = "kubeplug/pdb"
	name, _, err := c.Create(ctx, "PodDisruptionBudget", ns, []byte(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"generateName":"web-"},"spec":{"minAvailable":1}}`), manager)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, "web-") || len(name) != len("web-")+5 {
		t.Errorf("generated name %q, want web- and five characters", name)
	}
	if _, _, err := c.Create(ctx, "PodDisruptionBudget", ns, []byte(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"`+name+`"}}`), "m"); !apierrors.IsAlreadyExists(err) {
		t.Errorf("create of an existing name: %v, want AlreadyExists", err)
	}
	apply := func(name, field string, v int, manager string, force bool) error {
		_, err := c.Apply(ctx, "PodDisruptionBudget", ns, name, []byte(fmt.Sprintf(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{%q:%d}}`, field, v)), manager, force, "")
		return err
	}
	wantConflict := func(err error, with string) {
		t.Helper()
		var status apierrors.APIStatus
		if !apierrors.IsConflict(err) || !errors.As(err, &status) {
			t.Fatalf("got %v, want a conflict with %s", err, with)
		}
		causes := status.Status().Details.Causes
		if len(causes) != 1 || causes[0].Type != metav1.CauseTypeFieldManagerConflict || !strings.HasPrefix(causes[0].Message, "conflict with "+with) || causes[0].Field != ".spec.minAvailable" {
			t.Errorf("causes %+v, want one conflict with %s on .spec.minAvailable", causes, with)
		}
	}
	wantConflict(apply(name, "minAvailable", 2, manager, false), `"kubeplug/pdb"`)
	for _, step := range []struct {
		v     int
		force bool
	}{{1, false}, {2, true}, {3, false}} {
		if err := apply(name, "minAvailable", step.v, manager, step.force); err != nil {
			t.Fatalf("apply minAvailable %d (force %t): %v", step.v, step.force, err)
		}
	}

	// A budget someone else made: its fields are theirs.
	if _, _, err := c.Create(ctx, "PodDisruptionBudget", ns, []byte(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"theirs"},"spec":{"minAvailable":1}}`), "kubectl-create"); err != nil {
		t.Fatal(err)
	}
	wantConflict(apply("theirs", "minAvailable", 2, manager, false), `"kubectl-create"`)
	if err := apply("theirs", "minAvailable", 1, manager, false); err != nil {
		t.Errorf("apply of the value it has: %v, want none (shared)", err)
	}

	// Gone: an apply carrying its uid does not create it again.
	_, err = c.Apply(ctx, "PodDisruptionBudget", ns, "gone", []byte(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"uid":"6a1e0c9e-0000-4000-8000-000000000000"},"spec":{"minAvailable":1}}`), manager, false, "")
	if !apierrors.IsConflict(err) {
		t.Errorf("apply of an absent object with a uid: %v, want a conflict", err)
	}
}

// TestGenericApplyTakesItsOwnCreate: the executor's apply of a budget its
// module created conflicts, on the real API server, only with the module's
// own create, and is made again forcing; a budget another manager wrote is
// a conflict the executor reports.
func TestGenericApplyTakesItsOwnCreate(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, cp.Client())
	yes := true
	budgets := abi.Resource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets", Kind: "PodDisruptionBudget", Namespaced: &yes}
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	c := &kube.Cluster{Dynamic: dyn, Declared: func(kind string) (abi.Resource, bool) { return budgets, kind == budgets.Kind }}
	for _, b := range []struct{ name, manager string }{{"mine", actions.ModuleFieldManager("pdb")}, {"theirs", "kubectl-create"}} {
		if _, _, err := c.Create(ctx, "PodDisruptionBudget", ns, []byte(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"`+b.name+`"},"spec":{"minAvailable":1}}`), b.manager); err != nil {
			t.Fatal(err)
		}
	}
	m := abi.Manifest{Name: "pdb", Watches: &abi.Watches{
		Subject:   abi.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: &yes},
		Relations: []abi.Relation{{Name: "budgets", Type: abi.RelationAll, InNamespace: true, Resource: budgets}},
	}, Capabilities: []abi.Capability{{Action: abi.ActionApply, Resources: []string{"poddisruptionbudgets"}, Paths: []string{"/spec"}}}}
	req := &abi.ReconcileRequest{Key: ns + "/web", Declared: &abi.DeclaredSubject{
		Object: &abi.GenericObject{APIVersion: "apps/v1", Kind: "Deployment", Metadata: abi.ObjectMeta{Name: "web", Namespace: ns, UID: "web-uid"}},
	}}
	var actionsOf []abi.Action
	related := abi.RelatedObjects{Relation: "budgets"}
	for _, name := range []string{"mine", "theirs"} {
		u, err := dyn.Resource(schema.GroupVersionResource{Group: budgets.Group, Version: budgets.Version, Resource: budgets.Resource}).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		meta := abi.ObjectMeta{Name: name, Namespace: ns, UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion()}
		related.Objects = append(related.Objects, abi.GenericObject{APIVersion: "policy/v1", Kind: "PodDisruptionBudget", Metadata: meta, Object: abi.RawJSON(`{}`)})
		actionsOf = append(actionsOf, abi.Action{Type: abi.ActionApply, Target: abi.ObjectRef{Kind: "PodDisruptionBudget", Namespace: ns, Name: name, UID: meta.UID},
			Object: abi.RawJSON(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{"minAvailable":2}}`)})
	}
	req.Declared.Related = []abi.RelatedObjects{related}
	e := &actions.Executor{Cluster: c, Module: "pdb"}
	rep, err := e.Execute(ctx, m, req, &abi.Result{Actions: actionsOf})
	if !errors.Is(err, actions.ErrConflict) {
		t.Fatalf("got %v, want the user's budget to conflict", err)
	}
	if a := rep.Actions[0]; a.Outcome != actions.Executed || !strings.Contains(a.Write, "again forcing over its own create's fields") {
		t.Errorf("its own budget: %s (%s), %v", a.Outcome, a.Write, a.Err)
	}
	if a := rep.Actions[1]; a.Outcome != actions.Conflict || !strings.Contains(a.Err.Error(), `conflict with "kubectl-create"`) {
		t.Errorf("the user's budget: %s, %v", a.Outcome, a.Err)
	}
}
