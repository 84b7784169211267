package actions_test

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/actions"
)

const (
	driver = "hostpath.csi.k8s.io"
	handle = "vol-1"
)

// everything allows every action type on every resource.
func everything() abi.Manifest {
	m := abi.Manifest{Name: "policy"}
	for _, a := range abi.ActionTypes() {
		m.Capabilities = append(m.Capabilities, abi.Capability{Action: a, Resources: []string{"*"}})
	}
	return m
}

func meta(ns, name, uid, rv string) abi.ObjectMeta {
	return abi.ObjectMeta{Namespace: ns, Name: name, UID: uid, ResourceVersion: rv}
}

var setOwner = abi.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: true, BlockOwnerDeletion: true}

// setRequest is a statefulset input: set web with pods web-0 and web-1,
// claims data-web-0 (owned by the set, protected) and data-web-1, class
// fast and VolumeClaimUpdate web-update.
// heldRequest is setRequest with a hold's record on the set: held at 2, the
// user's partition 0; the set's partition is 1, so the user moved it since.
func heldRequest() *abi.ReconcileRequest {
	req := setRequest()
	req.StatefulSet.Set.Metadata.Annotations = map[string]string{abi.AnnotationHeldPartition: "2", abi.AnnotationUserPartition: "0", "other": "kept"}
	return req
}

// withOtherClaimUpdate is setRequest with a second VolumeClaimUpdate naming
// the set, not in effect.
func withOtherClaimUpdate() *abi.ReconcileRequest {
	req := setRequest()
	req.StatefulSet.OtherClaimUpdates = []abi.VolumeClaimUpdate{{
		Metadata: meta("default", "web-update-2", "vcu-2", "51"),
		Spec:     abi.VolumeClaimUpdateSpec{StatefulSetName: "web"},
	}}
	return req
}

func setRequest() *abi.ReconcileRequest {
	claim0 := abi.PersistentVolumeClaim{Metadata: meta("default", "data-web-0", "claim-0", "20")}
	claim0.Metadata.OwnerReferences = []abi.OwnerReference{setOwner}
	claim0.Metadata.Finalizers = []string{"kubernetes.io/pvc-protection"}
	claim0.Metadata.Labels = map[string]string{"app": "web"}
	claim0.Spec.Resources.Requests = map[string]string{"storage": "1Gi"}
	claim0.Spec.VolumeAttributesClassName = new("gold")
	set := &abi.StatefulSet{Metadata: meta("default", "web", "set-uid", "10")}
	set.Spec.Replicas = 2
	set.Spec.UpdateStrategy.Type = "RollingUpdate"
	set.Spec.UpdateStrategy.RollingUpdate = &abi.RollingUpdateStatefulSetStrategy{Partition: new(int32(1))}
	return &abi.ReconcileRequest{
		Subject: abi.SubjectStatefulSet,
		Key:     "default/web",
		StatefulSet: &abi.StatefulSetSubject{
			Set: set,
			Pods: []abi.Pod{
				{Metadata: meta("default", "web-0", "pod-0", "30")},
				{Metadata: meta("default", "web-1", "pod-1", "31")},
			},
			Claims: []abi.PersistentVolumeClaim{claim0, {Metadata: meta("default", "data-web-1", "claim-1", "21")}},
			StorageClasses: []abi.StorageClass{
				{Metadata: meta("", "fast", "class-uid", "40")},
			},
			ClaimUpdate: &abi.VolumeClaimUpdate{
				Metadata: meta("default", "web-update", "vcu-uid", "50"),
				Spec:     abi.VolumeClaimUpdateSpec{StatefulSetName: "web"},
				Status: abi.VolumeClaimUpdateStatus{
					ObservedGeneration: 2,
					VolumeClaimTemplates: []abi.VolumeClaimTemplateStatus{{
						TemplateName: "data", CompatibleReplicas: 2, TotalCapacity: map[string]string{"storage": "2Gi"},
					}},
					Conditions: []abi.Condition{{Type: "Ready", Status: "True", LastTransitionTime: "2024-06-01T12:00:00Z"}},
				},
			},
		},
	}
}

func setRef() abi.ObjectRef {
	return abi.ObjectRef{Kind: abi.KindStatefulSet, Namespace: "default", Name: "web", UID: "set-uid"}
}

func claimRef(i int) abi.ObjectRef {
	return abi.ObjectRef{Kind: abi.KindPersistentVolumeClaim, Namespace: "default", Name: []string{"data-web-0", "data-web-1"}[i], UID: []string{"claim-0", "claim-1"}[i]}
}

func podRef() abi.ObjectRef {
	return abi.ObjectRef{Kind: abi.KindPod, Namespace: "default", Name: "web-0", UID: "pod-0"}
}

func classRef() abi.ObjectRef {
	return abi.ObjectRef{Kind: abi.KindStorageClass, Name: "fast", UID: "class-uid"}
}

func claimUpdateRef() abi.ObjectRef {
	return abi.ObjectRef{Kind: abi.KindVolumeClaimUpdate, Namespace: "default", Name: "web-update", UID: "vcu-uid"}
}

// volumeRequest is a persistentvolume input: CSI volume pv-1 with two
// finalizers, released by its claim data-web-9 (gone), with class fast and
// an unrelated claim data-web-0 to act on. Its backing volume may be
// deleted.
func volumeRequest() *abi.ReconcileRequest {
	pv := &abi.PersistentVolume{Metadata: meta("", "pv-1", "pv-uid", "5")}
	pv.Metadata.Finalizers = []string{"external-provisioner.volume.kubernetes.io/finalizer", "kubernetes.io/pv-protection"}
	pv.Spec.Source = "csi"
	pv.Spec.CSI = &abi.CSIVolumeSource{Driver: driver, VolumeHandle: handle}
	pv.Spec.PersistentVolumeReclaimPolicy = "Delete"
	pv.Spec.StorageClassName = "fast"
	pv.Spec.ClaimRef = &abi.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data-web-9", UID: "claim-9"}
	pv.Status.Phase = "Released"
	return &abi.ReconcileRequest{
		Subject: abi.SubjectPersistentVolume,
		Key:     "pv-1",
		PersistentVolume: &abi.PersistentVolumeSubject{
			Volume:       pv,
			Claim:        &abi.PersistentVolumeClaim{Metadata: meta("default", "data-web-0", "claim-0", "20")},
			StorageClass: &abi.StorageClass{Metadata: meta("", "fast", "class-uid", "40")},
			Drivers:      []string{driver},
		},
	}
}

func volumeRef() abi.ObjectRef {
	return abi.ObjectRef{Kind: abi.KindPersistentVolume, Name: "pv-1", UID: "pv-uid"}
}

// releasedVolume is pv-1 of volumeRequest as the API server has it.
func releasedVolume() actions.PersistentVolume {
	pv := volumeRequest().PersistentVolume.Volume
	return actions.PersistentVolume{
		Meta:             actions.Meta{UID: pv.Metadata.UID, ResourceVersion: pv.Metadata.ResourceVersion, Finalizers: pv.Metadata.Finalizers},
		Phase:            pv.Status.Phase,
		ReclaimPolicy:    pv.Spec.PersistentVolumeReclaimPolicy,
		ClaimRef:         pv.Spec.ClaimRef,
		CSI:              pv.Spec.CSI,
		StorageClassName: pv.Spec.StorageClassName,
	}
}
