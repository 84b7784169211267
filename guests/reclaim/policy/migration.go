package policy

import "slices"

// MigratedPlugin is an in-tree volume plugin that CSI migration covers: one
// row of what kube-controller-manager and csi-translation-lib know of it,
// which a guest cannot import (no k8s.io packages).
type MigratedPlugin struct {
	// Plugin is the in-tree plugin's name, as pv.kubernetes.io/provisioned-by
	// carries it.
	Plugin string
	// Source is the PersistentVolume source the plugin serves, by its JSON
	// field name (abi.PersistentVolumeSpec.Source).
	Source string
	// Driver is the CSI driver the plugin migrates to: csi-translation-lib
	// translates Source to a volume of this driver.
	Driver string
}

// migratedPlugins are the plugins for which kube-controller-manager 1.37's
// IsMigrationEnabledForPlugin is true, which are exactly those
// csi-translation-lib 1.37 translates. The host's tests hold this table to
// csi-translation-lib (host/actions, TestMigratedPluginsMatchTranslationLib).
var migratedPlugins = [...]MigratedPlugin{
	{Plugin: "kubernetes.io/aws-ebs", Source: "awsElasticBlockStore", Driver: "ebs.csi.aws.com"},
	{Plugin: "kubernetes.io/gce-pd", Source: "gcePersistentDisk", Driver: "pd.csi.storage.gke.io"},
	{Plugin: "kubernetes.io/azure-file", Source: "azureFile", Driver: "file.csi.azure.com"},
	{Plugin: "kubernetes.io/azure-disk", Source: "azureDisk", Driver: "disk.csi.azure.com"},
	{Plugin: "kubernetes.io/cinder", Source: "cinder", Driver: "cinder.csi.openstack.org"},
	{Plugin: "kubernetes.io/vsphere-volume", Source: "vsphereVolume", Driver: "csi.vsphere.vmware.com"},
	{Plugin: "kubernetes.io/portworx-volume", Source: "portworxVolume", Driver: "pxd.portworx.com"},
}

// MigratedPlugins returns the in-tree plugins the module treats as migrated
// to CSI, for the host's test that holds them to csi-translation-lib.
func MigratedPlugins() []MigratedPlugin { return migratedPlugins[:] }

// migratedPlugin returns the row of the in-tree plugin named plugin, nil when
// CSI migration does not cover it: kube-controller-manager's
// IsMigrationEnabledForPlugin.
func migratedPlugin(plugin string) *MigratedPlugin {
	for i := range migratedPlugins {
		if migratedPlugins[i].Plugin == plugin {
			return &migratedPlugins[i]
		}
	}
	return nil
}

// migratedSource returns the row of the plugin whose source is source, nil
// when csi-translation-lib translates no such source (IsPVMigratable).
func migratedSource(source string) *MigratedPlugin {
	for i := range migratedPlugins {
		if migratedPlugins[i].Source == source {
			return &migratedPlugins[i]
		}
	}
	return nil
}

// knownProvisioner mirrors the provisioner library's knownProvisioner for an
// external-provisioner run for each of drivers: a provisioner answers to its
// driver's name and, when the driver is one an in-tree plugin migrates to, to
// that plugin's name too (external-provisioner passes it as
// AdditionalProvisionerNames).
func knownProvisioner(name string, drivers []string) bool {
	if name == "" {
		return false
	}
	if m := migratedPlugin(name); m != nil {
		name = m.Driver
	}
	return slices.Contains(drivers, name)
}
