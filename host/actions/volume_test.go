package actions_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

// hostileDeletion asks for the backing volume of pv-1, then deletes its
// claim and the PV: what a module that wants the data gone would ask.
func hostileDeletion() *abi.Result {
	return &abi.Result{Actions: []abi.Action{
		{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}},
		{Type: abi.ActionRemoveFinalizer, Target: volumeRef(), Finalizer: actions.FinalizerExternalProvisioner},
		{Type: abi.ActionDeleteObject, Target: claimRef(0)},
		{Type: abi.ActionDeleteObject, Target: volumeRef()},
	}}
}

// The host deletes a backing volume only when its own read of the PV from
// the API server says external-provisioner would: whatever the module's
// input says, a volume that fails a rule is refused, and nothing after the
// refusal (the claim's and the PV's deletion) is sent.
func TestExecuteDeleteVolumeRulesOnTheAPIServersView(t *testing.T) {
	pv := func(change func(v *actions.PersistentVolume)) *actions.PersistentVolume {
		v := releasedVolume()
		change(&v)
		return &v
	}
	tests := []struct {
		name    string
		volume  *actions.PersistentVolume
		current map[string]actions.Meta // claims, by name
		why     string
	}{
		{"bound", pv(func(v *actions.PersistentVolume) { v.Phase = "Bound" }), nil, `phase is "Bound", not Released`},
		{"retain", pv(func(v *actions.PersistentVolume) { v.ReclaimPolicy = "Retain" }), nil, `reclaim policy is "Retain", not Delete`},
		{"claim still there with the claimRef's uid", nil, map[string]actions.Meta{"data-web-9": {UID: "claim-9"}}, "claim default/data-web-9 (uid claim-9) still exists"},
		{"another handle", pv(func(v *actions.PersistentVolume) { v.CSI = &abi.CSIVolumeSource{Driver: driver, VolumeHandle: "vol-2"} }), nil, "is not the PersistentVolume's"},
		{"another driver", pv(func(v *actions.PersistentVolume) {
			v.CSI = &abi.CSIVolumeSource{Driver: "other.csi", VolumeHandle: handle}
		}), nil, "is not the PersistentVolume's"},
		{"not CSI", pv(func(v *actions.PersistentVolume) { v.CSI = nil }), nil, "neither a CSI volume nor an in-tree volume that CSI migration covers"},
		{"being deleted without the provisioner's finalizer", pv(func(v *actions.PersistentVolume) {
			v.Deleting, v.Finalizers = true, []string{"kubernetes.io/pv-protection"}
		}), nil, "being deleted without finalizer " + actions.FinalizerExternalProvisioner},
		{"provisioned by a provisioner the host is not", pv(func(v *actions.PersistentVolume) {
			v.Annotations = map[string]string{actions.AnnProvisionedBy: "other.csi"}
		}), nil, `names provisioner "other.csi"`},
		{"no claimRef", pv(func(v *actions.PersistentVolume) { v.ClaimRef = nil }), nil, "claimRef names no claim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := map[string]actions.Meta{"pv-1": {UID: "pv-uid", ResourceVersion: "5"}}
			for k, v := range tt.current {
				cur[k] = v
			}
			c, v := &fakeCluster{current: cur, volume: tt.volume}, &fakeVolumes{drivers: []string{driver}}
			rep, err := executor(c, v).Execute(context.Background(), everything(), volumeRequest(), hostileDeletion())
			require.ErrorIs(t, err, actions.ErrRefused)
			require.ErrorContains(t, err, tt.why)
			require.Equal(t, []actions.Outcome{actions.Refused, actions.Skipped, actions.Skipped, actions.Skipped}, outcomes(rep))
			require.Empty(t, v.calls, "no DeleteVolume")
			require.Empty(t, c.writes(), "nothing deleted")
			require.Equal(t, []string{"event"}, ops(c.calls), "the refusal's Warning event")
		})
	}
}

// The same rules hold on the module's own input, so that a module asking
// for an obviously forbidden deletion is refused without an API read, and
// shadow mode reports what the live host would refuse.
func TestExecuteDeleteVolumeRulesOnTheInput(t *testing.T) {
	req := func(change func(r *abi.ReconcileRequest)) *abi.ReconcileRequest {
		r := volumeRequest()
		change(r)
		return r
	}
	pv := func(r *abi.ReconcileRequest) *abi.PersistentVolume { return r.PersistentVolume.Volume }
	tests := []struct {
		name    string
		req     *abi.ReconcileRequest
		drivers []string
		why     string
	}{
		{"bound", req(func(r *abi.ReconcileRequest) { pv(r).Status.Phase = "Bound" }), []string{driver}, `phase is "Bound"`},
		{"retain", req(func(r *abi.ReconcileRequest) { pv(r).Spec.PersistentVolumeReclaimPolicy = "Retain" }), []string{driver}, `reclaim policy is "Retain"`},
		{"claim in the input with the claimRef's uid", req(func(r *abi.ReconcileRequest) {
			r.PersistentVolume.Claim = &abi.PersistentVolumeClaim{Metadata: meta("default", "data-web-9", "claim-9", "22")}
		}), []string{driver}, "still exists"},
		{"driver not configured", volumeRequest(), []string{"other.csi"}, `CSI driver "hostpath.csi.k8s.io" is not configured on this host`},
	}
	for _, tt := range tests {
		for _, shadow := range []bool{false, true} {
			t.Run(tt.name, func(t *testing.T) {
				c, v := &fakeCluster{}, &fakeVolumes{drivers: tt.drivers}
				e := executor(c, v)
				e.Shadow = shadow
				rep, _ := e.Execute(context.Background(), everything(), tt.req, hostileDeletion())
				require.Equal(t, actions.Refused, rep.Actions[0].Outcome)
				require.ErrorContains(t, rep.Actions[0].Err, tt.why)
				require.Empty(t, v.calls)
				require.Empty(t, c.writes())
				require.Zero(t, c.reads, "refused before any read")
			})
		}
	}
}

// A claim of the claimRef's name but another UID is a new claim: the
// released volume's claim is gone, and the volume is deleted.
func TestExecuteDeleteVolumeOfARecreatedClaim(t *testing.T) {
	c := &fakeCluster{current: map[string]actions.Meta{
		"pv-1":       {UID: "pv-uid", ResourceVersion: "5", Finalizers: []string{actions.FinalizerExternalProvisioner}, Deleting: true},
		"data-web-9": {UID: "new-claim"},
	}}
	v := &fakeVolumes{drivers: []string{driver}}
	res := &abi.Result{Actions: []abi.Action{{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}}}}
	rep, err := executor(c, v).Execute(context.Background(), everything(), volumeRequest(), res)
	require.NoError(t, err)
	require.Equal(t, []actions.Outcome{actions.Executed}, outcomes(rep))
	require.Len(t, v.calls, 1)
	require.Equal(t, 2, c.reads, "the volume and its claim, from the API server")
}

// external-provisioner's isProvisionerForVolume: a dynamically provisioned
// volume is deleted by the provisioner its annotation names, or the driver
// it migrated to; a static one by its CSI driver.
func TestExecuteDeleteVolumeProvisionedBy(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		deleted     bool
	}{
		{"static", nil, true},
		{"provisioned by the driver", map[string]string{actions.AnnProvisionedBy: driver}, true},
		{"provisioned by another provisioner", map[string]string{actions.AnnProvisionedBy: "example.com/nfs"}, false},
		{"migrated to the driver", map[string]string{actions.AnnProvisionedBy: "kubernetes.io/gce-pd", actions.AnnMigratedTo: driver}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv := releasedVolume()
			pv.Annotations = tt.annotations
			c, v := &fakeCluster{volume: &pv}, &fakeVolumes{drivers: []string{driver}}
			res := &abi.Result{Actions: []abi.Action{{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle}}}}
			rep, _ := executor(c, v).Execute(context.Background(), everything(), volumeRequest(), res)
			if tt.deleted {
				require.Equal(t, []actions.Outcome{actions.Executed}, outcomes(rep))
				require.Len(t, v.calls, 1)
				return
			}
			require.Equal(t, []actions.Outcome{actions.Refused}, outcomes(rep))
			require.Empty(t, v.calls)
		})
	}
}

// The secret passed to DeleteVolume is the host's choice, made as
// external-provisioner's handleSecretsForDeletion makes it; the module's is
// ignored.
func TestExecuteDeletionSecret(t *testing.T) {
	const (
		name = actions.ParamProvisionerSecretName
		ns   = actions.ParamProvisionerSecretNamespace
	)
	params := func(kv ...string) map[string]map[string]string {
		p := map[string]string{"type": "ssd"}
		for i := 0; i < len(kv); i += 2 {
			p[kv[i]] = kv[i+1]
		}
		return map[string]map[string]string{"fast": p}
	}
	ann := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name        string
		annotations map[string]string
		classes     map[string]map[string]string
		secret      string // "namespace/name", "" for none
		err         string
	}{
		{"no secret parameters", nil, params(), "", ""},
		{"class gone: none", nil, nil, "", ""},
		{"fixed", nil, params(name, "key", ns, "storage"), "storage/key", ""},
		{"templates", nil, params(name, "${pvc.name}-${pv.name}", ns, "${pvc.namespace}"), "default/data-web-9-pv-1", ""},
		{"deprecated keys", nil, params(actions.ParamDeprecatedSecretName, "old", actions.ParamDeprecatedSecretNamespace, "storage"), "storage/old", ""},
		{"default keys", nil, params(actions.ParamDefaultSecretName, "any", actions.ParamDefaultSecretNamespace, "kube-system"), "kube-system/any", ""},
		{"beta class annotation wins", ann("volume.beta.kubernetes.io/storage-class", "slow"), map[string]map[string]string{"slow": {name: "s", ns: "slow-ns"}}, "slow-ns/s", ""},
		{"PV annotations win", ann(actions.AnnDeletionSecretName, "recorded", actions.AnnDeletionSecretNamespace, "vault"), params(name, "key", ns, "storage"), "vault/recorded", ""},
		{"PV annotations empty: none", ann(actions.AnnDeletionSecretName, "", actions.AnnDeletionSecretNamespace, ""), params(name, "key", ns, "storage"), "", ""},
		{"one PV annotation: the class decides", ann(actions.AnnDeletionSecretName, "recorded"), params(name, "key", ns, "storage"), "storage/key", ""},
		{"claim name in the namespace", nil, params(name, "key", ns, "${pvc.name}"), "", "uses pvc.name"},
		{"claim annotation", nil, params(name, "${pvc.annotations['example.com/key']}", ns, "storage"), "", "cannot be resolved when a volume is deleted"},
		{"name without namespace", nil, params(name, "key"), "", "needs both"},
		{"invalid name", nil, params(name, "Key", ns, "storage"), "", "not a valid secret name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv := releasedVolume()
			pv.Annotations = tt.annotations
			c, v := &fakeCluster{volume: &pv, classes: tt.classes}, &fakeVolumes{drivers: []string{driver}}
			named := &abi.SecretReference{Namespace: "kube-system", Name: "module-chose-this"}
			res := &abi.Result{Actions: []abi.Action{{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle, Secrets: named}}}}
			rep, err := executor(c, v).Execute(context.Background(), everything(), volumeRequest(), res)
			if tt.err != "" {
				require.ErrorIs(t, err, actions.ErrSecretParams)
				require.ErrorContains(t, err, tt.err)
				require.Equal(t, []actions.Outcome{actions.Failed}, outcomes(rep))
				require.Empty(t, v.calls)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.secret, v.onlySecret(t))
		})
	}
}

// A module that names a secret is told, in the log, that it is ignored.
func TestExecuteWarnsOfAModuleNamedSecret(t *testing.T) {
	var logs bytes.Buffer
	c, v := &fakeCluster{}, &fakeVolumes{drivers: []string{driver}}
	e := executor(c, v)
	e.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	named := &abi.SecretReference{Namespace: "kube-system", Name: "admin"}
	res := &abi.Result{Actions: []abi.Action{{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: driver, VolumeHandle: handle, Secrets: named}}}}
	_, err := e.Execute(context.Background(), everything(), volumeRequest(), res)
	require.NoError(t, err)
	require.Contains(t, logs.String(), `level=WARN msg="deleteVolume names a Secret, which the host ignores`)
	require.Contains(t, logs.String(), "secret=kube-system/admin")
	require.Nil(t, v.calls[0].Secrets)
}
