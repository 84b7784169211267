package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
)

// A declared module's inspect says what it reconciles and reads, and the
// RBAC its declaration and grants need.
func TestInspectDescribesWatches(t *testing.T) {
	yes, no := true, false
	m := abi.Manifest{
		Name: "pdb", Version: "0.1.0", Hooks: []string{abi.HookReconcile},
		Watches: &abi.Watches{
			Subject: abi.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: &yes},
			Relations: []abi.Relation{
				{Name: "pods", Type: abi.RelationSelected, Path: "spec.selector", Resource: abi.Resource{Version: "v1", Resource: "pods"}},
				{Name: "classes", Type: abi.RelationAll, LabelSelector: "tier=a", Resource: abi.Resource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses", Namespaced: &no}},
			},
		},
		Capabilities: []abi.Capability{{Action: abi.ActionApply, Resources: []string{"deployments"}, Paths: []string{"/metadata/labels"}, Force: true}},
	}
	var b strings.Builder
	manifestFields(fieldWriter(&b), m, "1.6.0", moduleRBAC(m))
	out := b.String()
	for _, want := range []string{
		"deployments.apps/v1 (Deployment)",
		"pods: pods/v1, in its namespace, selected by its spec.selector",
		"classes: storageclasses.storage.k8s.io/v1, cluster-scoped, all matching tier=a",
		"apply on deployments at /metadata/labels, forcing conflicts",
		"list, patch, watch deployments.apps", // the informer and the apply
		"list, watch storageclasses.storage.k8s.io",
	} {
		require.Contains(t, out, want)
	}

	m.Watches.Subject.Namespaced = nil
	b.Reset()
	manifestFields(fieldWriter(&b), m, "1.6.0", moduleRBAC(m))
	require.Contains(t, b.String(), "cannot be derived: module \"pdb\": the scope of deployments.apps/v1 is not declared")
}
