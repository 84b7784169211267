package app

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/config"
	"github.com/kubeplug/kubeplug/host/controller"
)

type hooksOnly []string

func (h hooksOnly) Manifest() abi.Manifest { return abi.Manifest{Hooks: h} }
func (hooksOnly) Reconcile(context.Context, *abi.ReconcileRequest) (*abi.Result, error) {
	return nil, nil
}
func (hooksOnly) Close(context.Context) error { return nil }

func (hooksOnly) Admit(context.Context, *abi.AdmitRequest) (*abi.AdmitResponse, error) {
	return nil, nil
}

// TestAdmitters: the webhook serves the modules with an admit hook, with
// their entries' settings, and never a shadow module, which may have no
// allow: list; only modules with a reconcile hook get a controller.
func TestAdmitters(t *testing.T) {
	file := &config.File{Modules: []config.Module{
		{Name: "both", FailurePolicy: config.FailurePolicyIgnore, WebhookTimeout: 3 * time.Second},
		{Name: "admit"}, {Name: "reconcile"}, {Name: "shadow"},
	}}
	mods := []controller.Module{
		{Name: "both", Runtime: hooksOnly{abi.HookReconcile, abi.HookAdmit}},
		{Name: "admit", Runtime: hooksOnly{abi.HookAdmit}},
		{Name: "reconcile", Runtime: hooksOnly{abi.HookReconcile}},
		{Name: "shadow", Runtime: hooksOnly{abi.HookAdmit}, Shadow: true},
	}
	got := admitters(file, mods)
	require.Len(t, got, 2)
	require.Equal(t, "both", got[0].Name)
	require.Equal(t, config.FailurePolicyIgnore, got[0].FailurePolicy)
	require.Equal(t, 3*time.Second, got[0].Timeout)
	require.Equal(t, "admit", got[1].Name)

	var reconcilers []string
	for _, m := range mods {
		if reconciles(m) {
			reconcilers = append(reconcilers, m.Name)
		}
	}
	require.Equal(t, []string{"both", "reconcile"}, reconcilers)
}

// The API read behind an admission review answers as the host's cache
// would: a set outside the host's shard, by namespace or by label, is not
// found.
func TestLiveStatefulSetKeepsToTheShard(t *testing.T) {
	ctx := context.Background()
	set := func(ns, name string, l map[string]string) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}}
	}
	client := fake.NewClientset(set("a", "web", map[string]string{"shard": "1"}), set("a", "db", map[string]string{"shard": "2"}), set("b", "web", map[string]string{"shard": "1"}))
	sel, err := labels.Parse("shard=1")
	require.NoError(t, err)
	get := liveStatefulSet(client, config.Shard{Namespace: "a", LabelSelector: sel})
	s, err := get(ctx, "a", "web")
	require.NoError(t, err)
	require.Equal(t, "web", s.Name)
	for _, key := range [][2]string{{"a", "db"}, {"b", "web"}, {"a", "none"}} {
		_, err := get(ctx, key[0], key[1])
		require.True(t, apierrors.IsNotFound(err), "%s/%s: %v", key[0], key[1], err)
	}
	s, err = liveStatefulSet(client, config.Shard{})(ctx, "b", "web")
	require.NoError(t, err)
	require.Equal(t, "b", s.Namespace)
}
