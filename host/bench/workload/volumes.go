package workload

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/memcluster"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// VolumeDriver is the CSI driver of the Volumes workload.
const VolumeDriver = "hostpath.csi.k8s.io"

// Volumes builds the reconcile inputs of n CSI PersistentVolumes, through
// the host's snapshot builder, as a cluster running external-provisioner
// holds them: dynamically provisioned, reclaim policy Delete, bound to their
// claims. Every tenth is Released (its claim deleted) and still carries its
// finalizer, so the module deletes it; every tenth, offset by five, lacks
// the finalizer, so the module adds it; the rest need nothing.
func Volumes(tb testing.TB, n int) []*abi.ReconcileRequest {
	tb.Helper()
	c := memcluster.New(memcluster.Config{Drivers: []string{VolumeDriver}})
	del := corev1.PersistentVolumeReclaimDelete
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	objs := []runtime.Object{&storagev1.StorageClass{
		TypeMeta:      metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
		ObjectMeta:    metav1.ObjectMeta{Name: "fast"},
		Provisioner:   VolumeDriver,
		ReclaimPolicy: &del,
	}}
	for i := range n {
		pvName, claimName := fmt.Sprintf("pvc-%05d", i), fmt.Sprintf("data-%05d", i)
		claimUID := types.UID(claimName + "-uid")
		released := i%10 == 0
		pv := &corev1.PersistentVolume{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
			ObjectMeta: metav1.ObjectMeta{
				Name: pvName, UID: types.UID(pvName + "-uid"), CreationTimestamp: now,
				Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": VolumeDriver},
				Finalizers:  []string{"kubernetes.io/pv-protection", "external-provisioner.volume.kubernetes.io/finalizer"},
			},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: del,
				StorageClassName:              "fast",
				ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: claimName, UID: claimUID},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: VolumeDriver, VolumeHandle: "vol-" + pvName, FSType: "ext4",
					VolumeAttributes: map[string]string{"storage.kubernetes.io/csiProvisionerIdentity": "1767225600000-8081-" + VolumeDriver},
				}},
			},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
		}
		if i%10 == 5 {
			pv.Finalizers = pv.Finalizers[:1]
		}
		if released {
			pv.Status.Phase = corev1.VolumeReleased
			pv.Finalizers = []string{"external-provisioner.volume.kubernetes.io/finalizer"}
		}
		objs = append(objs, pv)
		if !released {
			class := "fast"
			objs = append(objs, &corev1.PersistentVolumeClaim{
				TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
				ObjectMeta: metav1.ObjectMeta{
					Name: claimName, Namespace: "default", UID: claimUID, CreationTimestamp: now,
					Finalizers: []string{"kubernetes.io/pvc-protection"},
				},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &class,
					VolumeName:       pvName,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
				},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
			})
		}
	}
	for _, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		Must(tb, err, "convert %T", o)
		Must(tb, c.Load(u), "load %T", o)
	}
	b := snapshot.Builder{Lister: c, Drivers: func() []string { return []string{VolumeDriver} }, Now: func() time.Time { return now.Time }}
	reqs := make([]*abi.ReconcileRequest, 0, n)
	for i := range n {
		req, err := b.PersistentVolume(fmt.Sprintf("pvc-%05d", i), nil)
		Must(tb, err, "build request %d", i)
		reqs = append(reqs, req)
	}
	return reqs
}
