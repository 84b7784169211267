package snapshot

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/kubeplug/kubeplug/abi"
)

// ProjectClaim projects c onto the abi type, nil for nil.
func ProjectClaim(c *corev1.PersistentVolumeClaim) *abi.PersistentVolumeClaim {
	if c == nil {
		return nil
	}
	out := new(abi.PersistentVolumeClaim)
	projectClaim(out, c)
	return out
}

func projectClaim(dst *abi.PersistentVolumeClaim, c *corev1.PersistentVolumeClaim) {
	projectMeta(&dst.Metadata, &c.ObjectMeta)

	dst.Spec.AccessModes = projectAccessModes(c.Spec.AccessModes)
	dst.Spec.Resources.Requests = projectResources(c.Spec.Resources.Requests)
	dst.Spec.Resources.Limits = projectResources(c.Spec.Resources.Limits)
	dst.Spec.StorageClassName = copyString(c.Spec.StorageClassName)
	dst.Spec.VolumeName = c.Spec.VolumeName
	if c.Spec.VolumeMode != nil {
		dst.Spec.VolumeMode = string(*c.Spec.VolumeMode)
	}
	dst.Spec.VolumeAttributesClassName = copyString(c.Spec.VolumeAttributesClassName)

	st := &dst.Status
	st.Phase = string(c.Status.Phase)
	st.AccessModes = projectAccessModes(c.Status.AccessModes)
	st.Capacity = projectResources(c.Status.Capacity)
	st.Conditions = projectEach(c.Status.Conditions, func(d *abi.Condition, x *corev1.PersistentVolumeClaimCondition) {
		*d = abi.Condition{
			Type:               string(x.Type),
			Status:             string(x.Status),
			Reason:             x.Reason,
			Message:            x.Message,
			LastTransitionTime: formatTime(x.LastTransitionTime),
		}
	})
	st.AllocatedResources = projectResources(c.Status.AllocatedResources)
	if n := len(c.Status.AllocatedResourceStatuses); n > 0 {
		st.AllocatedResourceStatuses = make(map[string]string, n)
		for k, v := range c.Status.AllocatedResourceStatuses {
			st.AllocatedResourceStatuses[string(k)] = string(v)
		}
	}
	st.CurrentVolumeAttributesClassName = copyString(c.Status.CurrentVolumeAttributesClassName)
}

// ProjectVolume projects v onto the abi type, nil for nil. Spec.Source is the
// JSON field name of the volume source that is set; Spec.CSI is filled for
// CSI volumes. An unset reclaim policy is the API default, Retain.
func ProjectVolume(v *corev1.PersistentVolume) *abi.PersistentVolume {
	if v == nil {
		return nil
	}
	out := new(abi.PersistentVolume)
	projectMeta(&out.Metadata, &v.ObjectMeta)

	spec := &out.Spec
	spec.Capacity = projectResources(v.Spec.Capacity)
	spec.AccessModes = projectAccessModes(v.Spec.AccessModes)
	if r := v.Spec.ClaimRef; r != nil {
		spec.ClaimRef = &abi.ObjectReference{
			APIVersion:      r.APIVersion,
			Kind:            r.Kind,
			Namespace:       r.Namespace,
			Name:            r.Name,
			UID:             string(r.UID),
			ResourceVersion: r.ResourceVersion,
		}
	}
	spec.PersistentVolumeReclaimPolicy = string(v.Spec.PersistentVolumeReclaimPolicy)
	if spec.PersistentVolumeReclaimPolicy == "" {
		spec.PersistentVolumeReclaimPolicy = string(corev1.PersistentVolumeReclaimRetain)
	}
	spec.StorageClassName = v.Spec.StorageClassName
	if v.Spec.VolumeMode != nil {
		spec.VolumeMode = string(*v.Spec.VolumeMode)
	}
	spec.VolumeAttributesClassName = copyString(v.Spec.VolumeAttributesClassName)
	spec.Source = volumeSource(&v.Spec.PersistentVolumeSource)
	if c := v.Spec.CSI; c != nil {
		spec.CSI = &abi.CSIVolumeSource{
			Driver:           c.Driver,
			VolumeHandle:     c.VolumeHandle,
			FSType:           c.FSType,
			ReadOnly:         c.ReadOnly,
			VolumeAttributes: c.VolumeAttributes,
		}
		if r := c.ControllerExpandSecretRef; r != nil {
			spec.CSI.ControllerExpandSecret = &abi.SecretReference{Namespace: r.Namespace, Name: r.Name}
		}
	}

	out.Status = abi.PersistentVolumeStatus{
		Phase:   string(v.Status.Phase),
		Reason:  v.Status.Reason,
		Message: v.Status.Message,
	}
	return out
}

// volumeSource names the volume source that is set by its JSON field name,
// "" when none is. The API server allows exactly one.
func volumeSource(s *corev1.PersistentVolumeSource) string {
	switch {
	case s.CSI != nil:
		return "csi"
	case s.HostPath != nil:
		return "hostPath"
	case s.Local != nil:
		return "local"
	case s.NFS != nil:
		return "nfs"
	case s.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case s.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case s.Glusterfs != nil:
		return "glusterfs"
	case s.RBD != nil:
		return "rbd"
	case s.ISCSI != nil:
		return "iscsi"
	case s.Cinder != nil:
		return "cinder"
	case s.CephFS != nil:
		return "cephfs"
	case s.FC != nil:
		return "fc"
	case s.Flocker != nil:
		return "flocker"
	case s.FlexVolume != nil:
		return "flexVolume"
	case s.AzureFile != nil:
		return "azureFile"
	case s.VsphereVolume != nil:
		return "vsphereVolume"
	case s.Quobyte != nil:
		return "quobyte"
	case s.AzureDisk != nil:
		return "azureDisk"
	case s.PhotonPersistentDisk != nil:
		return "photonPersistentDisk"
	case s.PortworxVolume != nil:
		return "portworxVolume"
	case s.ScaleIO != nil:
		return "scaleIO"
	case s.StorageOS != nil:
		return "storageos"
	}
	return ""
}

// ProjectStorageClass projects c onto the abi type, nil for nil. Unset
// reclaim policy and binding mode are the API defaults, Delete and Immediate.
func ProjectStorageClass(c *storagev1.StorageClass) *abi.StorageClass {
	if c == nil {
		return nil
	}
	out := new(abi.StorageClass)
	projectStorageClass(out, c)
	return out
}

func projectStorageClass(dst *abi.StorageClass, c *storagev1.StorageClass) {
	projectMeta(&dst.Metadata, &c.ObjectMeta)
	dst.Provisioner = c.Provisioner
	dst.Parameters = c.Parameters
	dst.ReclaimPolicy = string(corev1.PersistentVolumeReclaimDelete)
	if c.ReclaimPolicy != nil && *c.ReclaimPolicy != "" {
		dst.ReclaimPolicy = string(*c.ReclaimPolicy)
	}
	dst.VolumeBindingMode = string(storagev1.VolumeBindingImmediate)
	if c.VolumeBindingMode != nil && *c.VolumeBindingMode != "" {
		dst.VolumeBindingMode = string(*c.VolumeBindingMode)
	}
	dst.AllowVolumeExpansion = c.AllowVolumeExpansion != nil && *c.AllowVolumeExpansion
}
