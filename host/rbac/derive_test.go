package rbac_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/rbac"
)

// allows reports whether rules let verb be done on resource (with its
// subresource, "volumeclaimupdates/status") of group, named name ("" for a
// request that names none: list, watch, create). It follows RBAC's
// matching, less the wildcards, which Derive never writes.
func allows(rules []rbacv1.PolicyRule, verb, group, resource, name string) bool {
	for _, r := range rules {
		if slices.Contains(r.Verbs, verb) && slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) &&
			(len(r.ResourceNames) == 0 || name != "" && slices.Contains(r.ResourceNames, name)) {
			return true
		}
	}
	return false
}

// allowed reports whether r lets verb be done in namespace ns ("" for a
// cluster-wide request).
func allowed(r rbac.Rules, verb, group, resource, ns, name string) bool {
	return allows(r.Cluster, verb, group, resource, name) || ns != "" && allows(r.Namespaced[ns], verb, group, resource, name)
}

func derive(t *testing.T, h rbac.Host) rbac.Rules {
	t.Helper()
	if h.PodNamespace == "" {
		h.PodNamespace = "kubeplug-system"
	}
	r, err := rbac.Derive(h)
	require.NoError(t, err)
	all := append([]rbacv1.PolicyRule{}, r.Cluster...)
	for _, rs := range r.Namespaced {
		all = append(all, rs...)
	}
	for _, rule := range all {
		for _, s := range [][]string{rule.Verbs, rule.APIGroups, rule.Resources, rule.ResourceNames} {
			require.NotContains(t, s, "*", "a rule with a wildcard: %+v", rule)
		}
	}
	return r
}

var warnretain = rbac.Module{
	Name: "warnretain", Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile},
	Granted: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
}

var reclaim = rbac.Module{
	Name: "reclaim", Subject: abi.SubjectPersistentVolume, Hooks: []string{abi.HookReconcile},
	Granted: []abi.Capability{
		{Action: abi.ActionAddFinalizer, Resources: []string{"persistentvolumes"}},
		{Action: abi.ActionRemoveFinalizer, Resources: []string{"persistentvolumes"}},
		{Action: abi.ActionDeleteObject, Resources: []string{"persistentvolumes"}},
		{Action: abi.ActionDeleteVolume},
	},
}

// An event-emitting module gets the informers' reads and events: no
// Secret, no write, no delete.
func TestEventModuleReadsAndRecordsOnly(t *testing.T) {
	r := derive(t, rbac.Host{Modules: []rbac.Module{warnretain}, CSIDrivers: true})
	require.Empty(t, r.Namespaced["default"], "no namespace but the host's own should have a Role")
	for _, rule := range r.Cluster {
		for _, v := range rule.Verbs {
			require.Contains(t, []string{"list", "watch", "create", "patch"}, v, "%+v", rule)
			if v == "create" || v == "patch" {
				require.Equal(t, []string{"events"}, rule.Resources, "%+v", rule)
			}
		}
		require.NotContains(t, rule.Resources, "secrets")
	}
	require.True(t, allowed(r, "create", "", "events", "kubeplug-system", ""))
}

// deleteVolume reads Secrets only when the host has CSI drivers to call.
func TestSecretsOnlyForCSIDeletion(t *testing.T) {
	without := derive(t, rbac.Host{Modules: []rbac.Module{reclaim}})
	require.False(t, allowed(without, "get", "", "secrets", "any", "x"))
	with := derive(t, rbac.Host{Modules: []rbac.Module{reclaim}, CSIDrivers: true})
	require.True(t, allowed(with, "get", "", "secrets", "any", "x"))
	require.False(t, allowed(with, "list", "", "secrets", "any", ""))
	require.True(t, allowed(with, "delete", "", "persistentvolumes", "", "pv"))
	require.False(t, allowed(with, "delete", "", "persistentvolumeclaims", "any", "c"))
	// Events on volumes, cluster-scoped, go to default.
	require.True(t, allowed(with, "create", "", "events", "default", ""))
}

// A module limited to namespaces writes through Roles there, and nowhere
// else; its reads stay the cluster-wide informers'.
func TestNamespacedModuleGetsRoles(t *testing.T) {
	m := rbac.Module{
		Name: "retention", Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile}, Namespaces: []string{"a", "b"},
		Granted: []abi.Capability{{Action: abi.ActionUpdateOwnerReferences, Resources: []string{"persistentvolumeclaims"}}},
	}
	r := derive(t, rbac.Host{Modules: []rbac.Module{m}})
	for _, ns := range []string{"a", "b"} {
		require.True(t, allowed(r, "patch", "", "persistentvolumeclaims", ns, "c"))
		require.True(t, allowed(r, "get", "", "pods", ns, "p"), "checkNewOwners reads the owner")
		require.True(t, allowed(r, "create", "", "events", ns, ""), "refusals are recorded on the subject")
	}
	require.False(t, allowed(r, "patch", "", "persistentvolumeclaims", "c", "c"))
	require.False(t, allows(r.Cluster, "patch", "", "persistentvolumeclaims", "c"))
	require.True(t, allows(r.Cluster, "watch", "", "persistentvolumeclaims", ""))
}

// A shard's namespace narrows the namespaced informers to a Role there.
func TestShardNamespaceNarrowsInformers(t *testing.T) {
	r := derive(t, rbac.Host{Modules: []rbac.Module{warnretain}, ShardNamespace: "shard"})
	require.False(t, allows(r.Cluster, "list", "apps", "statefulsets", ""))
	require.True(t, allowed(r, "list", "apps", "statefulsets", "shard", ""))
	require.True(t, allows(r.Cluster, "list", "", "persistentvolumes", ""), "cluster-scoped kinds are watched whole")
}

// Shadow mode writes nothing: reads only, whatever is granted.
func TestShadowModuleReadsOnly(t *testing.T) {
	m := reclaim
	m.Shadow = true
	r := derive(t, rbac.Host{Modules: []rbac.Module{m}, CSIDrivers: true})
	require.Equal(t, derive(t, rbac.Host{CSIDrivers: true}), r)
}

// "*" among a capability's resources stands for the kinds of the module's
// input, each written out.
func TestWildcardResourcesExpand(t *testing.T) {
	m := rbac.Module{Name: "m", Subject: abi.SubjectPersistentVolume, Hooks: []string{abi.HookReconcile},
		Granted: []abi.Capability{{Action: abi.ActionAddFinalizer, Resources: []string{"*"}}}}
	r := derive(t, rbac.Host{Modules: []rbac.Module{m}})
	for _, res := range []string{"persistentvolumes", "persistentvolumeclaims"} {
		require.True(t, allowed(r, "patch", "", res, "ns", "x"), res)
	}
	require.True(t, allowed(r, "patch", "storage.k8s.io", "storageclasses", "", "x"))
	require.False(t, allowed(r, "patch", "apps", "statefulsets", "ns", "x"), "not in a volume's input")
}

// The host's own needs: its Lease by name (create cannot be named), the
// namespaces of an admission webhook, its certificate Secret by name.
func TestHostNeeds(t *testing.T) {
	admit := rbac.Module{Name: "policy", Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookAdmit}}
	r := derive(t, rbac.Host{
		Modules: []rbac.Module{admit}, Lease: &rbac.Ref{Namespace: "kp", Name: "lease"},
		WebhookCertSecret: &rbac.Ref{Namespace: "kp", Name: "certs"},
		WebhookConfigs:    rbac.WebhookConfigs{Mutating: "kubeplug", Validating: "kubeplug"},
	})
	require.True(t, allowed(r, "update", "coordination.k8s.io", "leases", "kp", "lease"))
	require.False(t, allowed(r, "update", "coordination.k8s.io", "leases", "kp", "other"))
	require.True(t, allowed(r, "create", "coordination.k8s.io", "leases", "kp", ""))
	require.True(t, allows(r.Cluster, "watch", "", "namespaces", ""))
	require.True(t, allows(r.Cluster, "get", "apps", "statefulsets", ""), "the set of a claim under review, when the cache has not got it")
	require.True(t, allowed(r, "update", "", "secrets", "kp", "certs"))
	require.False(t, allowed(r, "get", "", "secrets", "kp", "other"))
	require.False(t, allowed(r, "get", "", "secrets", "default", "certs"))
	require.True(t, allowed(r, "patch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "kubeplug"))
	require.False(t, allowed(r, "patch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "other"))

	require.True(t, allowed(r, "get", "apps", "replicasets", "kubeplug-system", "kubeplug-5d8f"), "the owner of the Lease and the Secret is found through them, in the host's namespace")
	require.True(t, allowed(r, "get", "", "pods", "kubeplug-system", "kubeplug-5d8f-x2x9z"))
	require.False(t, allowed(r, "get", "apps", "replicasets", "default", "x"))

	without := derive(t, rbac.Host{Modules: []rbac.Module{warnretain}})
	require.False(t, allows(without.Cluster, "watch", "", "namespaces", ""))
	require.False(t, allowed(without, "get", "apps", "replicasets", "kubeplug-system", "x"), "no Lease nor Secret: no owner to find")
	_, err := rbac.Derive(rbac.Host{})
	require.Error(t, err, "no Pod namespace")
}

// ModuleRules is what a module adds to its host's rules: with the host's
// own (Derive with no module), it makes what Derive gives for a host with
// the module, and it holds none of the host's own reads. Shadow modules
// and admit-only hooks of volumes add nothing.
func TestModuleRulesAreWhatAModuleAdds(t *testing.T) {
	admit := rbac.Module{Name: "policy", Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookAdmit},
		Granted: []abi.Capability{{Action: abi.CapabilityAdmit, Resources: []string{"persistentvolumeclaims"}}}}
	namespaced := rbac.Module{Name: "retention", Subject: abi.SubjectStatefulSet, Hooks: []string{abi.HookReconcile, abi.HookAdmit},
		Namespaces: []string{"a"}, Granted: []abi.Capability{{Action: abi.ActionUpdateOwnerReferences, Resources: []string{"persistentvolumeclaims"}}}}
	shadow := reclaim
	shadow.Shadow = true
	for _, m := range []rbac.Module{warnretain, reclaim, admit, namespaced, shadow} {
		t.Run(m.Name, func(t *testing.T) {
			own, err := rbac.ModuleRules(m)
			require.NoError(t, err)
			with := derive(t, rbac.Host{Modules: []rbac.Module{m}})
			base := derive(t, rbac.Host{})
			for _, verb := range []string{"get", "list", "watch", "create", "patch", "update", "delete"} {
				for _, res := range []struct{ group, resource string }{
					{"", "events"}, {"", "pods"}, {"", "persistentvolumeclaims"}, {"", "persistentvolumes"},
					{"apps", "statefulsets"}, {"kubeplug.dev", "volumeclaimupdates/status"}, {"", "secrets"},
				} {
					for _, ns := range []string{"", "a", "b", "default", "kubeplug-system"} {
						got := allowed(own, verb, res.group, res.resource, ns, "x") || allowed(base, verb, res.group, res.resource, ns, "x")
						require.Equal(t, allowed(with, verb, res.group, res.resource, ns, "x"), got,
							"%s %s/%s in %q: Derive with the module, against the host's own and ModuleRules", verb, res.group, res.resource, ns)
					}
				}
			}
			for _, verb := range []string{"list", "watch"} {
				require.False(t, allows(own.Cluster, verb, "", "pods", ""), "the informers are the host's own")
			}
		})
	}
	shadowRules, err := rbac.ModuleRules(shadow)
	require.NoError(t, err)
	require.Empty(t, shadowRules.Cluster)
	require.Empty(t, shadowRules.Namespaced)
	admitRules, err := rbac.ModuleRules(admit)
	require.NoError(t, err)
	require.True(t, allows(admitRules.Cluster, "get", "apps", "statefulsets", "x"), "the webhook reads a claim's set")
	_, err = rbac.ModuleRules(rbac.Module{Name: "m", Subject: "deployment"})
	require.ErrorContains(t, err, `subject "deployment"`)
}
