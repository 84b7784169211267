package actions_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

// pdbModule is the manifest of a module of Deployments, as the host holds
// it once it has resolved the declaration: it may create, apply (the spec
// and its labels) and delete PodDisruptionBudgets, and apply a
// Deployment's status.
func pdbModule() abi.Manifest {
	yes := true
	return abi.Manifest{
		Name: "pdb",
		Watches: &abi.Watches{
			Subject: abi.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: &yes},
			Relations: []abi.Relation{
				{Name: "budgets", Type: abi.RelationOwned, Resource: abi.Resource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets", Kind: "PodDisruptionBudget", Namespaced: &yes}},
				{Name: "pods", Type: abi.RelationSelected, Path: "spec.selector", Resource: abi.Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: &yes}},
			},
		},
		Capabilities: []abi.Capability{
			{Action: abi.ActionCreate, Resources: []string{"poddisruptionbudgets.policy"}},
			{Action: abi.ActionApply, Resources: []string{"poddisruptionbudgets"}, Paths: []string{"/spec", "/metadata/labels"}},
			{Action: abi.ActionDeleteObject, Resources: []string{"poddisruptionbudgets", "pods"}},
			{Action: abi.ActionApplyStatus, Resources: []string{"deployments/status"}},
			{Action: abi.ActionEvent, Resources: []string{"deployments"}},
		},
	}
}

func generic(apiVersion, kind string, m abi.ObjectMeta) abi.GenericObject {
	return abi.GenericObject{APIVersion: apiVersion, Kind: kind, Metadata: m, Object: abi.RawJSON(`{}`)}
}

// pdbRequest: Deployment a/web with the budget it controls, a budget it
// does not, and a pod.
func pdbRequest() *abi.ReconcileRequest {
	owner := abi.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "web-uid", Controller: true}
	web := generic("apps/v1", "Deployment", meta("a", "web", "web-uid", "7"))
	own := meta("a", "web", "pdb-uid", "3")
	own.OwnerReferences = []abi.OwnerReference{owner}
	return &abi.ReconcileRequest{Key: "a/web", Declared: &abi.DeclaredSubject{
		Object: &web,
		Related: []abi.RelatedObjects{
			{Relation: "budgets", Objects: []abi.GenericObject{
				generic("policy/v1", "PodDisruptionBudget", own),
				generic("policy/v1", "PodDisruptionBudget", meta("a", "manual", "manual-uid", "4")),
			}},
			{Relation: "pods", Objects: []abi.GenericObject{generic("v1", "Pod", meta("a", "web-x", "pod-uid", "5"))}},
		},
	}}
}

var (
	webRef      = abi.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "web", UID: "web-uid"}
	budgetRef   = abi.ObjectRef{Kind: "PodDisruptionBudget", Namespace: "a", Name: "web", UID: "pdb-uid"}
	manualRef   = abi.ObjectRef{Kind: "PodDisruptionBudget", Namespace: "a", Name: "manual", UID: "manual-uid"}
	selectedPod = abi.ObjectRef{Kind: "Pod", Namespace: "a", Name: "web-x", UID: "pod-uid"}
	newBudget   = abi.ObjectRef{Kind: "PodDisruptionBudget", Namespace: "a", Name: "web-2"}
)

func TestValidateGenericActions(t *testing.T) {
	pdb := func(extra string) abi.RawJSON {
		return abi.RawJSON(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget"` + extra + `}`)
	}
	for _, tc := range []struct {
		name string
		a    abi.Action
		want string // in the refusal; empty when allowed
	}{
		{"create a budget", abi.Action{Type: abi.ActionCreate, Target: newBudget, Object: pdb(`,"metadata":{"name":"web-2"},"spec":{"minAvailable":1}`)}, ""},
		{"create with generateName", abi.Action{Type: abi.ActionCreate, Target: abi.ObjectRef{Kind: "PodDisruptionBudget", Namespace: "a"},
			Object: pdb(`,"metadata":{"generateName":"web-"},"spec":{}`)}, ""},
		{"apply the spec and a label", abi.Action{Type: abi.ActionApply, Target: budgetRef, Object: pdb(`,"metadata":{"name":"web","labels":{"a":"b"}},"spec":{"minAvailable":2,"selector":{"matchLabels":{"app":"web"}}}`)}, ""},
		{"apply to a budget the subject does not control", abi.Action{Type: abi.ActionApply, Target: manualRef, Object: pdb(`,"spec":{"minAvailable":2}`)}, ""},
		{"apply the status", abi.Action{Type: abi.ActionApplyStatus, Target: webRef, Object: abi.RawJSON(`{"apiVersion":"apps/v1","kind":"Deployment","status":{"x":1}}`)}, ""},
		{"delete a controlled budget", abi.Action{Type: abi.ActionDeleteObject, Target: budgetRef}, ""},
		{"an event", abi.Action{Type: abi.ActionEvent, Target: webRef, Event: &abi.Event{Type: abi.EventNormal, Reason: "Made", Message: "m"}}, ""},

		{"a typed action", abi.Action{Type: abi.ActionSetPartition, Target: webRef, Partition: new(int32)},
			"a module that declares watches acts through apply, create, applyStatus, deleteObject, addFinalizer, removeFinalizer, event, not setPartition"},
		{"an undeclared kind", abi.Action{Type: abi.ActionDeleteObject, Target: abi.ObjectRef{Kind: "Service", Namespace: "a", Name: "web", UID: "s"}},
			`kind "Service" is not one module "pdb" declares`},
		{"an ungranted resource", abi.Action{Type: abi.ActionCreate, Target: abi.ObjectRef{Kind: "Pod", Namespace: "a", Name: "p"}, Object: abi.RawJSON(`{"apiVersion":"v1","kind":"Pod"}`)},
			"lacks the capability {action: create, resources: [pods]}"},
		{"delete what the subject does not control", abi.Action{Type: abi.ActionDeleteObject, Target: manualRef},
			"the object's controller is not the subject Deployment web: a module deletes only what its subject controls"},
		{"delete a pod it selects", abi.Action{Type: abi.ActionDeleteObject, Target: selectedPod}, "the object's controller is not the subject"},
		{"create in another namespace", abi.Action{Type: abi.ActionCreate, Target: abi.ObjectRef{Kind: "PodDisruptionBudget", Namespace: "b", Name: "x"}, Object: pdb(`,"spec":{}`)},
			`target.namespace "b" is not the subject's namespace "a"`},
		{"create with an owner", abi.Action{Type: abi.ActionCreate, Target: newBudget,
			Object: pdb(`,"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Secret","name":"s","uid":"u"}]},"spec":{}`)},
			"object.metadata.ownerReferences is the host's or the API server's to write"},
		{"create with a uid", abi.Action{Type: abi.ActionCreate, Target: abi.ObjectRef{Kind: "PodDisruptionBudget", Namespace: "a", Name: "x", UID: "u"}, Object: pdb(`,"spec":{}`)},
			"a created object has no uid yet"},
		{"create without a name", abi.Action{Type: abi.ActionCreate, Target: abi.ObjectRef{Kind: "PodDisruptionBudget", Namespace: "a"}, Object: pdb(`,"spec":{}`)},
			"neither a name nor metadata.generateName"},
		{"create with a bad name", abi.Action{Type: abi.ActionCreate, Target: abi.ObjectRef{Kind: "PodDisruptionBudget", Namespace: "a", Name: "Web_2"}, Object: pdb(`,"spec":{}`)},
			`name "Web_2"`},
		{"create with a name the target does not give", abi.Action{Type: abi.ActionCreate, Target: newBudget, Object: pdb(`,"metadata":{"name":"other"}`)},
			`object.metadata.name is other, the target's "web-2"`},
		{"create another kind than the target", abi.Action{Type: abi.ActionCreate, Target: newBudget, Object: abi.RawJSON(`{"apiVersion":"v1","kind":"Pod"}`)},
			"object is a v1 Pod, want apiVersion policy/v1 and kind PodDisruptionBudget"},
		{"create with a status", abi.Action{Type: abi.ActionCreate, Target: newBudget, Object: pdb(`,"status":{}`)}, "the object sets status"},
		{"create a subject", abi.Action{Type: abi.ActionCreate, Target: abi.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "x"}, Object: abi.RawJSON(`{}`)},
			"lacks the capability {action: create, resources: [deployments]}"},
		{"apply beyond the granted paths", abi.Action{Type: abi.ActionApply, Target: budgetRef, Object: pdb(`,"spec":{"minAvailable":2},"metadata":{"annotations":{"a":"b"}}`)},
			"object sets /metadata/annotations/a, which no apply capability for poddisruptionbudgets grants"},
		{"apply finalizers", abi.Action{Type: abi.ActionApply, Target: budgetRef, Object: pdb(`,"metadata":{"finalizers":["x"]}`)},
			"object.metadata.finalizers is the host's or the API server's to write"},
		{"apply a resourceVersion", abi.Action{Type: abi.ActionApply, Target: budgetRef, Object: pdb(`,"metadata":{"resourceVersion":"1"},"spec":{}`)},
			"object.metadata.resourceVersion is the host's"},
		{"apply nothing", abi.Action{Type: abi.ActionApply, Target: budgetRef, Object: pdb(`,"metadata":{"name":"web"}`)}, "object sets no field beyond its identity"},
		{"apply a status", abi.Action{Type: abi.ActionApply, Target: budgetRef, Object: pdb(`,"status":{"x":1}`)}, "applyStatus its status"},
		{"apply to another object's name", abi.Action{Type: abi.ActionApply, Target: budgetRef, Object: pdb(`,"metadata":{"name":"manual"},"spec":{}`)},
			`object.metadata.name is manual, the target's "web"`},
		{"apply to an object not in the input", abi.Action{Type: abi.ActionApply, Target: abi.ObjectRef{Kind: "PodDisruptionBudget", Namespace: "a", Name: "web", UID: "other"}, Object: pdb(`,"spec":{}`)},
			"not an object of the reconcile input"},
		{"apply two values", abi.Action{Type: abi.ActionApply, Target: budgetRef, Object: abi.RawJSON(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{}} {}`)},
			"object holds more than one JSON value"},
		{"apply something not JSON", abi.Action{Type: abi.ActionApply, Target: budgetRef, Object: abi.RawJSON(`{"spec":`)}, "object is not a JSON object"},
		{"apply without an object", abi.Action{Type: abi.ActionApply, Target: budgetRef}, "object is missing"},
		{"apply a huge object", abi.Action{Type: abi.ActionApply, Target: budgetRef, Object: abi.RawJSON(`{"x":"` + strings.Repeat("a", actions.MaxActionObjectBytes) + `"}`)},
			"more than 1048576"},
		{"the status of another object", abi.Action{Type: abi.ActionApplyStatus, Target: budgetRef, Object: pdb(`,"status":{}`)},
			"lacks the capability {action: applyStatus, resources: [poddisruptionbudgets/status]}"},
		{"a spec through applyStatus", abi.Action{Type: abi.ActionApplyStatus, Target: webRef, Object: abi.RawJSON(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{},"status":{}}`)},
			"object sets spec: applyStatus sets status only"},
		{"delete the subject", abi.Action{Type: abi.ActionDeleteObject, Target: webRef}, "lacks the capability {action: deleteObject, resources: [deployments]}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := actions.Validate(pdbModule(), pdbRequest(), tc.a)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, actions.ErrRefused)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A module that deletes Deployments still may not delete its subject, and
// one whose subject is being deleted creates nothing.
func TestValidateGenericSubjectRules(t *testing.T) {
	m := pdbModule()
	m.Capabilities = append(m.Capabilities, abi.Capability{Action: abi.ActionDeleteObject, Resources: []string{"deployments"}})
	_, err := actions.Validate(m, pdbRequest(), abi.Action{Type: abi.ActionDeleteObject, Target: webRef})
	require.ErrorContains(t, err, "a module does not delete its subject")

	req := pdbRequest()
	req.Declared.Object.Metadata.DeletionTimestamp = "2026-11-29T00:00:00Z"
	_, err = actions.Validate(pdbModule(), req, abi.Action{Type: abi.ActionCreate, Target: newBudget,
		Object: abi.RawJSON(`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{}}`)})
	require.ErrorContains(t, err, "the subject Deployment web is being deleted")
}

// A built-in module cannot use the generic actions, whatever its
// capabilities say.
func TestValidateGenericActionsNeedWatches(t *testing.T) {
	_, err := actions.Validate(everything(), setRequest(), abi.Action{Type: abi.ActionApply,
		Target: abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: "default", Name: "web", UID: "set-uid"}, Object: abi.RawJSON(`{}`)})
	require.ErrorContains(t, err, `apply acts on the kinds a module declares in watches, and module "policy" declares none`)
}
