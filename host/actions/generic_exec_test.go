package actions_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/memcluster"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// declaredWorld is memcluster with Deployment a/web and a budget a user
// made, and the builder of pdbModule's requests over it: the path a
// declared module's `kubeplug test` will take.
func declaredWorld(t *testing.T) (*memcluster.Cluster, func() *abi.ReconcileRequest) {
	t.Helper()
	c := memcluster.New(memcluster.Config{})
	require.NoError(t, c.Load(
		map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "a", "uid": "web-uid"},
			"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}}},
		map[string]any{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": map[string]any{"name": "manual", "namespace": "a"},
			"spec": map[string]any{"minAvailable": int64(1)}},
	))
	m := pdbModule()
	m.Watches.Relations[0] = abi.Relation{Name: "budgets", Type: abi.RelationAll, InNamespace: true, Resource: m.Watches.Relations[0].Resource}
	d, err := snapshot.CompileDeclaration(m.Watches)
	require.NoError(t, err)
	b := &snapshot.Builder{Lister: c}
	return c, func() *abi.ReconcileRequest {
		req, err := b.Declared(d, "a/web", nil)
		require.NoError(t, err)
		return req
	}
}

func budgetRefIn(t *testing.T, req *abi.ReconcileRequest, name string) abi.ObjectRef {
	t.Helper()
	for _, o := range req.Declared.Relation("budgets") {
		if o.Metadata.Name == name {
			return abi.ObjectRef{Kind: o.Kind, Namespace: o.Metadata.Namespace, Name: o.Metadata.Name, UID: o.Metadata.UID}
		}
	}
	t.Fatalf("no budget %s in the request", name)
	return abi.ObjectRef{}
}

// TestExecuteGenericActions: a declared module creates a budget its subject
// controls, changes it with its own apply (the API server's conflict with
// its own create is taken by force, nothing else is), is refused a change
// of a budget a user owns, and deletes what it created.
func TestExecuteGenericActions(t *testing.T) {
	ctx := context.Background()
	c, request := declaredWorld(t)
	m := pdbModule()
	e := &actions.Executor{Cluster: c, Module: "pdb"}
	obj := func(spec string) abi.RawJSON {
		return abi.RawJSON(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":` + spec + `}`)
	}

	rep, err := e.Execute(ctx, m, request(), &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionCreate, Target: abi.ObjectRef{Kind: "PodDisruptionBudget", Namespace: "a", Name: "web"}, Object: obj(`{"minAvailable":1}`)},
	}})
	require.NoError(t, err)
	require.Equal(t, actions.Executed, rep.Actions[0].Outcome)
	made, ok := c.Get("PodDisruptionBudget", "a", "web")
	require.True(t, ok)
	require.Equal(t, []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "web-uid", "controller": true, "blockOwnerDeletion": true}},
		made["metadata"].(map[string]any)["ownerReferences"])

	req := request()
	rep, err = e.Execute(ctx, m, req, &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionApply, Target: budgetRefIn(t, req, "web"), Object: obj(`{"minAvailable":2}`)},
	}})
	require.NoError(t, err)
	require.Contains(t, rep.Actions[0].Write, "server-side apply as kubeplug/pdb (force=false)")
	require.Contains(t, rep.Actions[0].Write, "again forcing over its own create's fields")
	made, _ = c.Get("PodDisruptionBudget", "a", "web")
	require.EqualValues(t, 2, made["spec"].(map[string]any)["minAvailable"])

	req = request()
	rep, err = e.Execute(ctx, m, req, &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionApply, Target: budgetRefIn(t, req, "web"), Object: obj(`{"minAvailable":3}`)},
		{Type: abi.ActionApply, Target: budgetRefIn(t, req, "manual"), Object: obj(`{"minAvailable":3}`)},
	}})
	require.ErrorIs(t, err, actions.ErrConflict)
	require.Equal(t, actions.Executed, rep.Actions[0].Outcome)
	require.NotContains(t, rep.Actions[0].Write, "again forcing", "its own apply's fields are its own")
	require.Equal(t, actions.Conflict, rep.Actions[1].Outcome)
	require.ErrorContains(t, rep.Actions[1].Err, "conflict with the object's earlier writer: .spec.minAvailable")
	manual, _ := c.Get("PodDisruptionBudget", "a", "manual")
	require.EqualValues(t, 1, manual["spec"].(map[string]any)["minAvailable"], "the user's budget is left as it was")

	req = request()
	rep, err = e.Execute(ctx, m, req, &abi.Result{Actions: []abi.Action{{Type: abi.ActionDeleteObject, Target: budgetRefIn(t, req, "web")}}})
	require.NoError(t, err)
	require.Equal(t, actions.Executed, rep.Actions[0].Outcome)
	_, ok = c.Get("PodDisruptionBudget", "a", "web")
	require.False(t, ok)
}

// A forcing grant forces; shadow mode creates and applies nothing.
func TestExecuteGenericForceAndShadow(t *testing.T) {
	ctx := context.Background()
	c, request := declaredWorld(t)
	m := pdbModule()
	m.Capabilities[1].Force = true
	req := request()
	rep, err := (&actions.Executor{Cluster: c, Module: "pdb"}).Execute(ctx, m, req, &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionApply, Target: budgetRefIn(t, req, "manual"), Object: abi.RawJSON(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{"minAvailable":4}}`)},
	}})
	require.NoError(t, err)
	require.Contains(t, rep.Actions[0].Write, "force=true")
	manual, _ := c.Get("PodDisruptionBudget", "a", "manual")
	require.EqualValues(t, 4, manual["spec"].(map[string]any)["minAvailable"])

	writes := c.WriteCount()
	rep, err = (&actions.Executor{Cluster: c, Module: "pdb", Shadow: true}).Execute(ctx, m, request(), &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionCreate, Target: abi.ObjectRef{Kind: "PodDisruptionBudget", Namespace: "a", Name: "new"}, Object: abi.RawJSON(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{}}`)},
	}})
	require.NoError(t, err)
	require.Equal(t, actions.Shadow, rep.Actions[0].Outcome)
	require.Equal(t, writes, c.WriteCount())
}
