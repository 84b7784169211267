package memcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
	"github.com/kubeplug/kubeplug/host/memcluster"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

const driver = "csi.example.com"

// volume is a PV of driver bound by claimRef to claim default/<claim>
// (uid claim-uid), of class fast.
func volume(name, phase, policy, claim string) map[string]any {
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "PersistentVolume",
		"metadata": map[string]any{
			"name":        name,
			"annotations": map[string]any{actions.AnnProvisionedBy: driver},
			"finalizers":  []any{actions.FinalizerExternalProvisioner},
		},
		"spec": map[string]any{
			"accessModes":                   []any{"ReadWriteOnce"},
			"capacity":                      map[string]any{"storage": "1Gi"},
			"claimRef":                      map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": "default", "name": claim, "uid": "claim-uid"},
			"csi":                           map[string]any{"driver": driver, "volumeHandle": "handle-" + name},
			"persistentVolumeReclaimPolicy": policy,
			"storageClassName":              "fast",
		},
		"status": map[string]any{"phase": phase},
	}
}

var fastClass = map[string]any{
	"apiVersion":  "storage.k8s.io/v1",
	"kind":        "StorageClass",
	"metadata":    map[string]any{"name": "fast"},
	"provisioner": driver,
	"parameters": map[string]any{
		actions.ParamProvisionerSecretName:      "${pv.name}-deleter",
		actions.ParamProvisionerSecretNamespace: "${pvc.namespace}",
	},
}

// A module that asks for the deletion of a volume, its claim and its PV
// gets it only for a volume external-provisioner would delete, and the
// secret passed to the driver is the one the class names, not the
// module's, read from the stored objects as the live host reads them from
// the API server.
func TestExecutorDeletesVolumesByTheHostsRules(t *testing.T) {
	tests := []struct {
		name    string
		pv      map[string]any
		claim   bool // the claim claimRef names exists, with its uid
		deleted bool
		secret  *abi.SecretReference
	}{
		{"released, claim gone", volume("pv-released", "Released", "Delete", "data-0"), false, true, &abi.SecretReference{Namespace: "default", Name: "pv-released-deleter"}},
		{"bound", volume("pv-bound", "Bound", "Delete", "data-0"), true, false, nil},
		{"retain", volume("pv-retain", "Released", "Retain", "data-0"), false, false, nil},
		{"released but the claim is still there", volume("pv-stale", "Released", "Delete", "data-0"), true, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []map[string]any{fastClass, tt.pv}
			if tt.claim {
				objs = append(objs, claim("data-0", withMeta("uid", "claim-uid")))
			}
			c := memcluster.New(memcluster.Config{Now: func() time.Time { return t0 }, Drivers: []string{driver}})
			require.NoError(t, c.Load(objs...))
			name := tt.pv["metadata"].(map[string]any)["name"].(string)
			b := &snapshot.Builder{Lister: c, Drivers: func() []string { return []string{driver} }, Now: func() time.Time { return t0 }}
			req, err := b.Build(abi.SubjectPersistentVolume, name, nil)
			require.NoError(t, err)
			// Whatever the input shows, the module claims the claim is gone.
			req.PersistentVolume.Claim = nil
			pv := req.PersistentVolume.Volume
			target := abi.ObjectRef{Kind: abi.KindPersistentVolume, Name: name, UID: pv.Metadata.UID}
			res := &abi.Result{Actions: []abi.Action{
				{Type: abi.ActionDeleteVolume, Target: target, Volume: &abi.VolumeDelete{
					Driver: driver, VolumeHandle: "handle-" + name, Secrets: &abi.SecretReference{Namespace: "kube-system", Name: "admin"},
				}},
				{Type: abi.ActionRemoveFinalizer, Target: target, Finalizer: actions.FinalizerExternalProvisioner},
				{Type: abi.ActionDeleteObject, Target: target},
			}}
			m := abi.Manifest{Name: "hostile", Capabilities: []abi.Capability{
				{Action: abi.ActionDeleteVolume}, {Action: abi.ActionRemoveFinalizer, Resources: []string{"*"}}, {Action: abi.ActionDeleteObject, Resources: []string{"*"}},
			}}
			e := &actions.Executor{Cluster: c, Volumes: c, Module: "hostile"}
			_, err = e.Execute(context.Background(), m, req, res)
			if !tt.deleted {
				require.ErrorIs(t, err, actions.ErrRefused)
				require.Empty(t, c.VolumeDeletes())
				_, ok := c.Get(abi.KindPersistentVolume, "", name)
				require.True(t, ok, "the PV is kept")
				return
			}
			require.NoError(t, err)
			require.Equal(t, []memcluster.VolumeDelete{{Driver: driver, VolumeHandle: "handle-" + name, Secrets: tt.secret}}, c.VolumeDeletes())
			_, ok := c.Get(abi.KindPersistentVolume, "", name)
			require.False(t, ok, "the PV is gone")
		})
	}
}
