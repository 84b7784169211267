package rbac_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/rbac"
)

// pdbModule declares Deployments with their pods (scope from the host's
// table) and StorageClasses (declared cluster-scoped), in namespace a.
func pdbModule() rbac.Module {
	yes, no := true, false
	return rbac.Module{
		Name: "pdb", Hooks: []string{abi.HookReconcile}, Namespaces: []string{"a"},
		Watches: &abi.Watches{
			Subject: abi.Resource{Group: "apps", Version: "v1", Resource: "deployments", Namespaced: &yes},
			Relations: []abi.Relation{
				{Name: "budgets", Type: abi.RelationOwned, Resource: abi.Resource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets", Namespaced: &yes}},
				{Name: "pods", Type: abi.RelationSelected, Path: "spec.selector", Resource: abi.Resource{Version: "v1", Resource: "pods"}},
				{Name: "classes", Type: abi.RelationAll, Resource: abi.Resource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses", Namespaced: &no}},
			},
		},
		Granted: []abi.Capability{
			{Action: abi.ActionCreate, Resources: []string{"poddisruptionbudgets.policy"}},
			{Action: abi.ActionApply, Resources: []string{"poddisruptionbudgets"}, Paths: []string{"/spec"}},
			{Action: abi.ActionDeleteObject, Resources: []string{"poddisruptionbudgets"}},
			{Action: abi.ActionApplyStatus, Resources: []string{"deployments.apps/status"}},
			{Action: abi.ActionEvent, Resources: []string{"deployments"}},
			// Not declared: grants nothing.
			{Action: abi.ActionDeleteObject, Resources: []string{"services"}},
		},
	}
}

// TestDeclaredModuleRules: a declared module gets informers on what it
// declares, where each lives, and the verbs of its granted actions on the
// declared resources they name, nowhere else.
func TestDeclaredModuleRules(t *testing.T) {
	r, err := rbac.ModuleRules(pdbModule())
	require.NoError(t, err)
	for _, tc := range []struct {
		verb, group, resource, ns string
		want                      bool
	}{
		{"list", "apps", "deployments", "a", true},
		{"watch", "apps", "deployments", "b", false},
		{"watch", "", "pods", "a", true},
		{"list", "", "pods", "", false},
		{"list", "storage.k8s.io", "storageclasses", "", true},
		{"create", "policy", "poddisruptionbudgets", "a", true},
		{"patch", "policy", "poddisruptionbudgets", "a", true},
		{"delete", "policy", "poddisruptionbudgets", "a", true},
		{"delete", "policy", "poddisruptionbudgets", "b", false},
		{"patch", "apps", "deployments/status", "a", true},
		{"patch", "apps", "deployments", "a", false},
		{"delete", "apps", "deployments", "a", false},
		{"create", "", "events", "a", true},
		{"delete", "", "services", "a", false},
		{"get", "", "secrets", "a", false},
	} {
		require.Equal(t, tc.want, allowed(r, tc.verb, tc.group, tc.resource, tc.ns, "x"), "%s %s/%s in %q", tc.verb, tc.group, tc.resource, tc.ns)
	}

	shadow := pdbModule()
	shadow.Shadow = true
	r, err = rbac.ModuleRules(shadow)
	require.NoError(t, err)
	require.True(t, allowed(r, "watch", "policy", "poddisruptionbudgets", "a", "x"), "a shadow module's informers")
	require.False(t, allowed(r, "create", "policy", "poddisruptionbudgets", "a", "x"), "a shadow module writes nothing")
	require.False(t, allowed(r, "create", "", "events", "a", "x"))

	unscoped := pdbModule()
	unscoped.Watches.Relations[0].Resource.Namespaced = nil
	_, err = rbac.ModuleRules(unscoped)
	require.ErrorContains(t, err, `module "pdb": the scope of poddisruptionbudgets.policy/v1 is not declared: give namespaced: true or false`)
}
