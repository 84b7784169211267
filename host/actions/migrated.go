package actions

import (
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	csitranslation "k8s.io/csi-translation-lib"

	"github.com/kubeplug/kubeplug/abi"
)

// translator translates in-tree volume sources to CSI as external-provisioner
// does before it deletes a volume whose in-tree plugin CSI migration covers
// (csiProvisioner.Delete: IsPVMigratable, then TranslateInTreePVToCSI).
var translator = csitranslation.New()

// translateInTree reads the CSI volume behind the in-tree source of obj, a
// PersistentVolume without spec.csi as the API server serves it: the driver
// and handle csi-translation-lib translates it to, and the in-tree plugin.
// plugin is "" when CSI migration covers no source of obj; err says why a
// source it covers does not translate (a malformed volume ID, say).
func translateInTree(obj map[string]any) (csi *abi.CSIVolumeSource, plugin string, err error) {
	var pv corev1.PersistentVolume
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &pv); err != nil {
		return nil, "", fmt.Errorf("read the PersistentVolume: %w", err)
	}
	if !translator.IsPVMigratable(&pv) {
		return nil, "", nil
	}
	plugin, err = translator.GetInTreePluginNameFromSpec(&pv, nil)
	if err != nil {
		return nil, "", err
	}
	translated, err := translator.TranslateInTreePVToCSI(logr.Discard(), &pv)
	if err != nil {
		return nil, plugin, err
	}
	return &abi.CSIVolumeSource{Driver: translated.Spec.CSI.Driver, VolumeHandle: translated.Spec.CSI.VolumeHandle}, plugin, nil
}

// migratedClassParameters returns the parameters of a StorageClass of the
// in-tree plugin as csi-translation-lib translates them for the driver the
// plugin migrates to: external-provisioner reads a migrated volume's class
// so before it resolves the deletion secret (getSecretsFromSC), and the
// translation may name a secret (portworx's openstorage.io/auth-secret-*
// become the provisioner secret) or drop one (vSphere keeps only the
// parameters it knows). The class is taken to be the plugin's own, which it
// is for every volume the plugin or a migrated provisioner made; the host
// reads only its parameters.
func migratedClassParameters(plugin string, params map[string]string) (map[string]string, error) {
	sc, err := translator.TranslateInTreeStorageClassToCSI(logr.Discard(), plugin, &storagev1.StorageClass{Provisioner: plugin, Parameters: params})
	if err != nil {
		return nil, err
	}
	return sc.Parameters, nil
}

// inputCSI returns the CSI volume a module's view of pv names: spec.csi, or
// for an in-tree source that CSI migration covers the driver it translates
// to, without a handle (the view names the source, not its fields), and the
// in-tree plugin. It returns nil for any other volume.
func inputCSI(pv *abi.PersistentVolume) (csi *abi.CSIVolumeSource, plugin string) {
	if pv.Spec.CSI != nil {
		return pv.Spec.CSI, ""
	}
	plugin, driver := migratedSource(pv.Spec.Source)
	if plugin == "" {
		return nil, ""
	}
	return &abi.CSIVolumeSource{Driver: driver}, plugin
}

// migratedSource returns the in-tree plugin of the PersistentVolume source
// named source (its JSON field name, abi.PersistentVolumeSpec.Source) and
// the CSI driver it migrates to, or "", "" when CSI migration does not cover
// it. It asks csi-translation-lib about a volume with that source set and
// empty, which is all that names the plugin.
func migratedSource(source string) (plugin, driver string) {
	if source == "" {
		return "", ""
	}
	data, err := json.Marshal(map[string]any{source: struct{}{}})
	if err != nil {
		return "", ""
	}
	var pv corev1.PersistentVolume
	if json.Unmarshal(data, &pv.Spec.PersistentVolumeSource) != nil || !translator.IsPVMigratable(&pv) {
		return "", ""
	}
	plugin, err = translator.GetInTreePluginNameFromSpec(&pv, nil)
	if err != nil {
		return "", ""
	}
	driver, err = translator.GetCSINameFromInTreeName(plugin)
	if err != nil {
		return "", ""
	}
	return plugin, driver
}

// knownProvisioner mirrors the provisioner library's knownProvisioner for an
// external-provisioner run for each configured driver: it answers to the
// driver's name and, for a driver an in-tree plugin migrates to, to the
// plugin's name too (external-provisioner passes it as
// AdditionalProvisionerNames).
func knownProvisioner(name string, configured func(string) bool) bool {
	if name == "" {
		return false
	}
	if configured(name) {
		return true
	}
	if !translator.IsMigratableIntreePluginByName(name) {
		return false
	}
	driver, err := translator.GetCSINameFromInTreeName(name)
	return err == nil && configured(driver)
}

// volumeMismatch says why want does not name the backing volume csi
// describes, "" when it does. A module is not shown a migrated volume's
// in-tree source, so for one it names the driver and leaves the handle
// empty: the host translates the source itself, on its own read.
func volumeMismatch(want *abi.VolumeDelete, csi *abi.CSIVolumeSource, migrated bool) string {
	switch {
	case migrated && (want.Driver != csi.Driver || want.VolumeHandle != ""):
		return fmt.Sprintf("volume %s/%s is not the PersistentVolume's: for an in-tree volume migrated to CSI, name driver %s and an empty volumeHandle; the host translates the in-tree source",
			want.Driver, want.VolumeHandle, csi.Driver)
	case !migrated && (want.Driver != csi.Driver || want.VolumeHandle != csi.VolumeHandle):
		return fmt.Sprintf("volume %s/%s is not the PersistentVolume's, %s/%s", want.Driver, want.VolumeHandle, csi.Driver, csi.VolumeHandle)
	}
	return ""
}
