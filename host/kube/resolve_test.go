package kube_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/kube"
)

func discoveryOf(lists ...*metav1.APIResourceList) *fakediscovery.FakeDiscovery {
	return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: lists}}
}

var (
	watchable = metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}
	served    = discoveryOf(
		&metav1.APIResourceList{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: watchable},
			{Name: "deployments/status", Kind: "Deployment", Namespaced: true, Verbs: metav1.Verbs{"get", "patch"}},
		}},
		&metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "persistentvolumes", Kind: "PersistentVolume", Verbs: watchable},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
		}},
		&metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: watchable},
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: watchable},
		}},
	)
)

func TestResolve(t *testing.T) {
	yes, no := true, false
	got, err := kube.Resolve(context.Background(), served, abi.Resource{Group: "apps", Version: "v1", Resource: "deployments"})
	require.NoError(t, err)
	require.Equal(t, "Deployment", got.Kind)
	require.True(t, *got.Namespaced)
	got, err = kube.Resolve(context.Background(), served, abi.Resource{Version: "v1", Resource: "persistentvolumes", Kind: "PersistentVolume", Namespaced: &no})
	require.NoError(t, err)
	require.False(t, *got.Namespaced)

	for _, tc := range []struct {
		name      string
		r         abi.Resource
		want      string
		notServed bool
	}{
		{"a group not served", abi.Resource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"},
			"resolve volumesnapshots.snapshot.storage.k8s.io/v1: snapshot.storage.k8s.io/v1 not served by the API server (install its CRD", true},
		{"a resource not served", abi.Resource{Group: "apps", Version: "v1", Resource: "replicasets"},
			`apps/v1 has no resource "replicasets" not served`, true},
		{"another kind", abi.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deploy"},
			"the declaration says kind Deploy, the API server Deployment", false},
		{"another scope", abi.Resource{Version: "v1", Resource: "persistentvolumes", Namespaced: &yes},
			"the declaration says namespaced: true, the API server false", false},
		{"a resource that cannot be watched", abi.Resource{Version: "v1", Resource: "bindings"},
			`the API server does not serve "get" on it`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kube.Resolve(context.Background(), served, tc.r)
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, tc.notServed, errors.Is(err, kube.ErrNotServed))
		})
	}
}

func TestResolveWatchesRefusesTwoKindsOfOneName(t *testing.T) {
	w := &abi.Watches{
		Subject:   abi.Resource{Group: "apps", Version: "v1", Resource: "deployments"},
		Relations: []abi.Relation{{Name: "other", Type: abi.RelationAll, Resource: abi.Resource{Group: "example.com", Version: "v1", Resource: "deployments"}}},
	}
	_, err := kube.ResolveWatches(context.Background(), served, w)
	require.ErrorContains(t, err, `watches.relations[0] (other): kind Deployment is in group "apps" and in group "example.com"`)
	w.Relations[0].Resource.Resource = "pods"
	_, err = kube.ResolveWatches(context.Background(), served, w)
	require.ErrorContains(t, err, `kind Pod is in group "" and in group "example.com"`)
	w.Relations = nil
	got, err := kube.ResolveWatches(context.Background(), served, w)
	require.NoError(t, err)
	require.Equal(t, "Deployment", got.Subject.Kind)
	require.Empty(t, w.Subject.Kind, "the declaration itself is not changed")
}
