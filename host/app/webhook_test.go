package app

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
