package controller_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/memcluster"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// declaredGuest is a module of Deployments that gives each a budget.
type declaredGuest struct {
	got []*abi.ReconcileRequest
}

func (g *declaredGuest) Manifest() abi.Manifest {
	return abi.Manifest{Name: "pdb", Version: "1", Hooks: []string{abi.HookReconcile},
		Watches:      &abi.Watches{Subject: abi.Resource{Group: "apps", Version: "v1", Resource: "deployments"}},
		Capabilities: []abi.Capability{{Action: abi.ActionCreate, Resources: []string{"poddisruptionbudgets"}}}}
}

func (g *declaredGuest) Reconcile(_ context.Context, req *abi.ReconcileRequest) (*abi.Result, error) {
	g.got = append(g.got, req)
	if len(req.Declared.Relation("budgets")) > 0 {
		return &abi.Result{}, nil
	}
	s := req.Declared.Object.Metadata
	return &abi.Result{Actions: []abi.Action{{Type: abi.ActionCreate,
		Target: abi.ObjectRef{Kind: "PodDisruptionBudget", Namespace: s.Namespace, Name: s.Name},
		Object: abi.RawJSON(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{"minAvailable":1}}`)}}}, nil
}

func (g *declaredGuest) Close(context.Context) error { return nil }

// TestControllerServesADeclaredSubject: a controller given a declaration
// builds its subject's input through it, checks the module's actions
// against the declaration as resolved and carries them out; a module of
// another subject does not swap in.
func TestControllerServesADeclaredSubject(t *testing.T) {
	yes := true
	w := &abi.Watches{
		Subject: abi.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: &yes},
		Relations: []abi.Relation{{Name: "budgets", Type: abi.RelationOwned,
			Resource: abi.Resource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets", Kind: "PodDisruptionBudget", Namespaced: &yes}}},
	}
	d, err := snapshot.CompileDeclaration(w)
	require.NoError(t, err)
	c := memcluster.New(memcluster.Config{})
	require.NoError(t, c.Load(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "a", "uid": "web-uid"}}))
	g := &declaredGuest{}
	ctrl := controller.New(controller.Module{Runtime: g, Name: "pdb", Subject: d, Namespaces: []string{"a"}}, controller.Deps{Lister: c, Cluster: c})
	require.Equal(t, "deployments.apps/v1", ctrl.Subject().Name())

	out := ctrl.Reconcile(context.Background(), "a/web")
	require.NoError(t, out.Err)
	budget, ok := c.Get("PodDisruptionBudget", "a", "web")
	require.True(t, ok, "the module's create was carried out")
	require.Equal(t, "web-uid", budget["metadata"].(map[string]any)["ownerReferences"].([]any)[0].(map[string]any)["uid"])
	out = ctrl.Reconcile(context.Background(), "a/web")
	require.NoError(t, out.Err)
	require.Len(t, g.got, 2)
	require.Len(t, g.got[1].Declared.Relation("budgets"), 1, "the budget it owns is in the next input")

	_, err = ctrl.Swap(controller.Module{Runtime: &fakeGuest{}, Name: "pdb"})
	require.ErrorIs(t, err, controller.ErrSwap)
}
