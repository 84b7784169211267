package actions_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	csitranslation "k8s.io/csi-translation-lib"
	"k8s.io/csi-translation-lib/plugins"

	"github.com/kubeplug/kubeplug/abi"
	reclaim "github.com/kubeplug/kubeplug/guests/reclaim/policy"
	"github.com/kubeplug/kubeplug/host/actions"
)

const (
	ebsDriver = "ebs.csi.aws.com"
	ebsPlugin = "kubernetes.io/aws-ebs"
	ebsHandle = "vol-0a1b2c3d4e5f60718"
)

// inTreeObject is a PersistentVolume with the in-tree source source, as the
// API server serves it.
func inTreeObject(source string, fields map[string]any, labels map[string]any) map[string]any {
	meta := map[string]any{"name": "pv-1", "uid": "pv-uid", "resourceVersion": "5"}
	if labels != nil {
		meta["labels"] = labels
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta,
		"spec":   map[string]any{source: fields, "persistentVolumeReclaimPolicy": "Delete"},
		"status": map[string]any{"phase": "Released"},
	}
}

// The volume an in-tree source is read as: the CSI volume csi-translation-lib
// translates it to, as external-provisioner deletes it.
func TestVolumeFromObjectTranslatesInTreeSources(t *testing.T) {
	tests := []struct {
		name          string
		obj           map[string]any
		csi           *abi.CSIVolumeSource
		plugin        string
		untranslatble string
	}{
		{"aws-ebs, URL-style volume ID", inTreeObject("awsElasticBlockStore", map[string]any{"volumeID": "aws://eu-west-1a/" + ebsHandle}, nil),
			&abi.CSIVolumeSource{Driver: ebsDriver, VolumeHandle: ebsHandle}, ebsPlugin, ""},
		{"aws-ebs, bare volume ID", inTreeObject("awsElasticBlockStore", map[string]any{"volumeID": ebsHandle}, nil),
			&abi.CSIVolumeSource{Driver: ebsDriver, VolumeHandle: ebsHandle}, ebsPlugin, ""},
		{"gce-pd, zone from the label", inTreeObject("gcePersistentDisk", map[string]any{"pdName": "disk-1"}, map[string]any{"topology.kubernetes.io/zone": "europe-west1-b"}),
			&abi.CSIVolumeSource{Driver: "pd.csi.storage.gke.io", VolumeHandle: "projects/UNSPECIFIED/zones/europe-west1-b/disks/disk-1"}, "kubernetes.io/gce-pd", ""},
		{"aws-ebs, malformed volume ID", inTreeObject("awsElasticBlockStore", map[string]any{"volumeID": "aws://eu-west-1a/disk-1"}, nil),
			nil, ebsPlugin, "Invalid format for AWS volume"},
		{"rbd: not migrated", inTreeObject("rbd", map[string]any{"monitors": []any{"10.0.0.1:6789"}, "image": "img"}, nil), nil, "", ""},
		{"hostPath", inTreeObject("hostPath", map[string]any{"path": "/data"}, nil), nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := actions.VolumeFromObject(tt.obj)
			require.Equal(t, tt.csi, v.CSI)
			require.Equal(t, tt.plugin, v.InTreePlugin)
			if tt.untranslatble == "" {
				require.Empty(t, v.Untranslatable)
			} else {
				require.Contains(t, v.Untranslatable, tt.untranslatble)
			}
			require.Equal(t, "Released", v.Phase)
		})
	}
}

// migratedRequest is volumeRequest's pv-1 as an aws-ebs volume migrated to
// ebs.csi.aws.com, in the module's view: the source's name, no spec.csi.
func migratedRequest() *abi.ReconcileRequest {
	r := volumeRequest()
	pv := r.PersistentVolume.Volume
	pv.Spec.Source, pv.Spec.CSI = "awsElasticBlockStore", nil
	pv.Metadata.Annotations = map[string]string{actions.AnnProvisionedBy: ebsPlugin, actions.AnnMigratedTo: ebsDriver}
	r.PersistentVolume.Drivers = []string{ebsDriver}
	return r
}

// migratedVolume is pv-1 of migratedRequest as the executor reads it from
// the API server.
func migratedVolume() actions.PersistentVolume {
	v := releasedVolume()
	v.Annotations = map[string]string{actions.AnnProvisionedBy: ebsPlugin, actions.AnnMigratedTo: ebsDriver}
	v.CSI, v.InTreePlugin = &abi.CSIVolumeSource{Driver: ebsDriver, VolumeHandle: ebsHandle}, ebsPlugin
	return v
}

// An in-tree volume migrated to a configured driver is deleted as
// external-provisioner deletes it: through the driver, with the handle the
// host translates from its own read; the module names the driver only.
// Everything else about it is refused as for a CSI volume.
func TestExecuteDeleteVolumeOfAMigratedVolume(t *testing.T) {
	tests := []struct {
		name    string
		req     func(r *abi.ReconcileRequest)
		volume  func(v *actions.PersistentVolume)
		want    abi.VolumeDelete
		drivers []string
		why     string // "" when deleted
	}{
		{"annotated migrated-to", nil, nil, abi.VolumeDelete{Driver: ebsDriver}, nil, ""},
		{"by plugin, before migrated-to", func(r *abi.ReconcileRequest) {
			delete(r.PersistentVolume.Volume.Metadata.Annotations, actions.AnnMigratedTo)
		}, func(v *actions.PersistentVolume) { delete(v.Annotations, actions.AnnMigratedTo) }, abi.VolumeDelete{Driver: ebsDriver}, nil, ""},
		{"static, migrated-to a configured driver", func(r *abi.ReconcileRequest) {
			delete(r.PersistentVolume.Volume.Metadata.Annotations, actions.AnnProvisionedBy)
		}, func(v *actions.PersistentVolume) { delete(v.Annotations, actions.AnnProvisionedBy) }, abi.VolumeDelete{Driver: ebsDriver}, nil, ""},
		{"static, not migrated-to", func(r *abi.ReconcileRequest) {
			r.PersistentVolume.Volume.Metadata.Annotations = nil
		}, func(v *actions.PersistentVolume) { v.Annotations = nil }, abi.VolumeDelete{Driver: ebsDriver}, nil, "statically provisioned in-tree volume"},
		{"another in-tree plugin's, not migrated-to", func(r *abi.ReconcileRequest) {
			r.PersistentVolume.Volume.Metadata.Annotations = map[string]string{actions.AnnProvisionedBy: "kubernetes.io/gce-pd"}
		}, func(v *actions.PersistentVolume) {
			v.Annotations = map[string]string{actions.AnnProvisionedBy: "kubernetes.io/gce-pd"}
		}, abi.VolumeDelete{Driver: ebsDriver}, nil, `names provisioner "kubernetes.io/gce-pd"`},
		{"a handle named by the module", nil, nil, abi.VolumeDelete{Driver: ebsDriver, VolumeHandle: ebsHandle}, nil, "name driver ebs.csi.aws.com and an empty volumeHandle"},
		{"another driver", nil, nil, abi.VolumeDelete{Driver: driver}, []string{driver, ebsDriver}, "is not the PersistentVolume's"},
		{"driver not configured", nil, nil, abi.VolumeDelete{Driver: ebsDriver}, []string{driver}, `CSI driver "ebs.csi.aws.com" is not configured`},
		{"source does not translate", nil, func(v *actions.PersistentVolume) {
			v.CSI, v.Untranslatable = nil, "Invalid format for AWS volume (aws://eu-west-1a/disk-1)"
		}, abi.VolumeDelete{Driver: ebsDriver}, nil, "does not translate to CSI: Invalid format"},
		{"bound", nil, func(v *actions.PersistentVolume) { v.Phase = "Bound" }, abi.VolumeDelete{Driver: ebsDriver}, nil, `phase is "Bound"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, pv := migratedRequest(), migratedVolume()
			if tt.req != nil {
				tt.req(req)
			}
			if tt.volume != nil {
				tt.volume(&pv)
			}
			drivers := tt.drivers
			if drivers == nil {
				drivers = []string{ebsDriver}
			}
			c, v := &fakeCluster{volume: &pv}, &fakeVolumes{drivers: drivers}
			want := tt.want
			res := &abi.Result{Actions: []abi.Action{{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &want}}}
			rep, err := executor(c, v).Execute(context.Background(), everything(), req, res)
			if tt.why != "" {
				require.ErrorIs(t, err, actions.ErrRefused)
				require.ErrorContains(t, err, tt.why)
				require.Empty(t, v.calls)
				return
			}
			require.NoError(t, err)
			require.Equal(t, []actions.Outcome{actions.Executed}, outcomes(rep))
			require.Len(t, v.calls, 1)
			require.Equal(t, ebsDriver+"/"+ebsHandle, v.calls[0].Name, "the handle the host translated")
		})
	}
}

// The reclaim module knows the migrated plugins from a table of its own (a
// guest cannot import csi-translation-lib); it must say what the library
// says, and name every plugin kube-controller-manager 1.37 migrates
// (IsMigrationEnabledForPlugin lists these seven).
func TestMigratedPluginsMatchTranslationLib(t *testing.T) {
	tr := csitranslation.New()
	var names []string
	for _, m := range reclaim.MigratedPlugins() {
		names = append(names, m.Plugin)
		driver, err := tr.GetCSINameFromInTreeName(m.Plugin)
		require.NoError(t, err, m.Plugin)
		require.Equal(t, driver, m.Driver, m.Plugin)
		// The source's JSON name: the module's view names the source so.
		v := actions.VolumeFromObject(inTreeObject(m.Source, map[string]any{}, nil))
		require.Equal(t, m.Plugin, v.InTreePlugin, "source %s", m.Source)
	}
	require.ElementsMatch(t, []string{
		plugins.AWSEBSInTreePluginName, plugins.GCEPDInTreePluginName, plugins.AzureFileInTreePluginName,
		plugins.AzureDiskInTreePluginName, plugins.CinderInTreePluginName, plugins.VSphereInTreePluginName,
		plugins.PortworxVolumePluginName,
	}, names)
}

// The deletion secret of a migrated volume comes from its class as
// csi-translation-lib translates it, as external-provisioner reads it:
// portworx's auth secret is the provisioner secret.
func TestExecuteDeletionSecretOfAMigratedVolume(t *testing.T) {
	tests := []struct {
		name   string
		plugin string
		params map[string]string
		secret string
	}{
		{"portworx auth secret", plugins.PortworxVolumePluginName,
			map[string]string{"openstorage.io/auth-secret-name": "px-admin", "openstorage.io/auth-secret-namespace": "portworx", "repl": "2"}, "portworx/px-admin"},
		{"aws-ebs keeps the class's provisioner secret", ebsPlugin,
			map[string]string{actions.ParamProvisionerSecretName: "ebs-key", actions.ParamProvisionerSecretNamespace: "kube-system", "type": "gp2"}, "kube-system/ebs-key"},
		{"vSphere drops parameters it does not know", plugins.VSphereInTreePluginName,
			map[string]string{actions.ParamProvisionerSecretName: "vc-key", actions.ParamProvisionerSecretNamespace: "kube-system", "diskformat": "thin"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The secret depends on the plugin only: the volume stays
			// migratedVolume's in every other way.
			pv := migratedVolume()
			pv.InTreePlugin = tt.plugin
			c := &fakeCluster{volume: &pv, classes: map[string]map[string]string{"fast": tt.params}}
			v := &fakeVolumes{drivers: []string{ebsDriver}}
			res := &abi.Result{Actions: []abi.Action{{Type: abi.ActionDeleteVolume, Target: volumeRef(), Volume: &abi.VolumeDelete{Driver: ebsDriver}}}}
			_, err := executor(c, v).Execute(context.Background(), everything(), migratedRequest(), res)
			require.NoError(t, err)
			require.Equal(t, tt.secret, v.onlySecret(t))
		})
	}
}
