package snapshot_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/snapshot"
)

// Times in a non-UTC zone, to check that projections render them in UTC.
var (
	plus2      = time.FixedZone("UTC+2", 2*60*60)
	created    = metav1.NewTime(time.Date(2024, 6, 1, 14, 0, 0, 0, plus2))
	createdStr = "2024-06-01T12:00:00Z"
	deleted    = metav1.NewTime(time.Date(2024, 6, 2, 14, 30, 5, 999, plus2))
	deletedStr = "2024-06-02T12:30:05Z"
)

// fullMeta is metadata with every projected field set, and wantMeta its
// projection.
func fullMeta(ns, name, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              name,
		Namespace:         ns,
		UID:               types.UID("uid-" + uid),
		ResourceVersion:   "42",
		Generation:        3,
		Labels:            map[string]string{"app": "web"},
		Annotations:       map[string]string{"note": "n"},
		OwnerReferences:   []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Database", Name: "db", UID: "db-uid", Controller: new(true), BlockOwnerDeletion: new(true)}, {APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid", Controller: new(false)}},
		Finalizers:        []string{"example.com/keep"},
		CreationTimestamp: created,
		DeletionTimestamp: &deleted,
	}
}

func wantMeta(ns, name, uid string) abi.ObjectMeta {
	return abi.ObjectMeta{
		Name:              name,
		Namespace:         ns,
		UID:               "uid-" + uid,
		ResourceVersion:   "42",
		Generation:        3,
		Labels:            map[string]string{"app": "web"},
		Annotations:       map[string]string{"note": "n"},
		OwnerReferences:   []abi.OwnerReference{{APIVersion: "example.com/v1", Kind: "Database", Name: "db", UID: "db-uid", Controller: true, BlockOwnerDeletion: true}, {APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}},
		Finalizers:        []string{"example.com/keep"},
		CreationTimestamp: createdStr,
		DeletionTimestamp: deletedStr,
	}
}

func qty(s string) resource.Quantity { return resource.MustParse(s) }

func fullClaim() *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: fullMeta("default", "data-web-0", "c"),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: qty("1024Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceStorage: qty("2Gi")},
			},
			StorageClassName:          new("fast"),
			VolumeName:                "pv-1",
			VolumeMode:                new(corev1.PersistentVolumeBlock),
			VolumeAttributesClassName: new("gold"),
		},
		Status: corev1.PersistentVolumeClaimStatus{
			Phase:       corev1.ClaimBound,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: qty("1Gi")},
			Conditions: []corev1.PersistentVolumeClaimCondition{{
				Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue,
				Reason: "Resizing", Message: "m", LastTransitionTime: created, LastProbeTime: created,
			}},
			AllocatedResources:               corev1.ResourceList{corev1.ResourceStorage: qty("2Gi")},
			AllocatedResourceStatuses:        map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInProgress},
			CurrentVolumeAttributesClassName: new("silver"),
		},
	}
}

func wantClaim() abi.PersistentVolumeClaim {
	return abi.PersistentVolumeClaim{
		Metadata: wantMeta("default", "data-web-0", "c"),
		Spec: abi.PersistentVolumeClaimSpec{
			AccessModes: []string{"ReadWriteOnce", "ReadOnlyMany"},
			Resources: abi.ResourceRequirements{
				Requests: map[string]string{"storage": "1Gi"},
				Limits:   map[string]string{"storage": "2Gi"},
			},
			StorageClassName:          new("fast"),
			VolumeName:                "pv-1",
			VolumeMode:                "Block",
			VolumeAttributesClassName: new("gold"),
		},
		Status: abi.PersistentVolumeClaimStatus{
			Phase:       "Bound",
			AccessModes: []string{"ReadWriteOnce"},
			Capacity:    map[string]string{"storage": "1Gi"},
			Conditions: []abi.Condition{{
				Type: "Resizing", Status: "True", Reason: "Resizing", Message: "m", LastTransitionTime: createdStr,
			}},
			AllocatedResources:               map[string]string{"storage": "2Gi"},
			AllocatedResourceStatuses:        map[string]string{"storage": "ControllerResizeInProgress"},
			CurrentVolumeAttributesClassName: new("silver"),
		},
	}
}

func TestProjectStatefulSet(t *testing.T) {
	template := fullClaim()
	template.Name = "data"
	s := &appsv1.StatefulSet{
		ObjectMeta: fullMeta("default", "web", "s"),
		Spec: appsv1.StatefulSetSpec{
			Replicas: new(int32(3)),
			Ordinals: &appsv1.StatefulSetOrdinals{Start: 2},
			Selector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}},
			},
			ServiceName:         "web-svc",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{
					Partition:      new(int32(1)),
					MaxUnavailable: new(intstr.FromString("25%")),
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{*template},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			RevisionHistoryLimit: new(int32(5)),
			MinReadySeconds:      30,
		},
		Status: appsv1.StatefulSetStatus{
			ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 2, CurrentReplicas: 1, UpdatedReplicas: 2,
			AvailableReplicas: 2, CurrentRevision: "web-1", UpdateRevision: "web-2",
		},
	}
	wantTemplate := wantClaim()
	wantTemplate.Metadata.Name = "data"
	want := &abi.StatefulSet{
		Metadata: wantMeta("default", "web", "s"),
		Spec: abi.StatefulSetSpec{
			Replicas:            3,
			Ordinals:            &abi.StatefulSetOrdinals{Start: 2},
			Selector:            map[string]string{"app": "web"},
			ServiceName:         "web-svc",
			PodManagementPolicy: "Parallel",
			UpdateStrategy: abi.StatefulSetUpdateStrategy{
				Type:          "RollingUpdate",
				RollingUpdate: &abi.RollingUpdateStatefulSetStrategy{Partition: new(int32(1)), MaxUnavailable: "25%"},
			},
			VolumeClaimTemplates:                 []abi.PersistentVolumeClaim{wantTemplate},
			PersistentVolumeClaimRetentionPolicy: &abi.StatefulSetPersistentVolumeClaimPolicy{WhenDeleted: "Delete", WhenScaled: "Retain"},
			RevisionHistoryLimit:                 5,
			MinReadySeconds:                      30,
		},
		Status: abi.StatefulSetStatus{
			ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 2, CurrentReplicas: 1, UpdatedReplicas: 2,
			AvailableReplicas: 2, CurrentRevision: "web-1", UpdateRevision: "web-2",
		},
	}
	require.Equal(t, want, snapshot.ProjectStatefulSet(s))
}

func TestProjectStatefulSetDefaults(t *testing.T) {
	tests := []struct {
		name   string
		spec   appsv1.StatefulSetSpec
		policy abi.StatefulSetPersistentVolumeClaimPolicy
		maxUn  string
	}{{
		name:   "nothing set",
		policy: abi.StatefulSetPersistentVolumeClaimPolicy{WhenDeleted: "Retain", WhenScaled: "Retain"},
	}, {
		name: "only whenScaled set",
		spec: appsv1.StatefulSetSpec{PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		}},
		policy: abi.StatefulSetPersistentVolumeClaimPolicy{WhenDeleted: "Retain", WhenScaled: "Delete"},
	}, {
		name: "only whenDeleted set, integer maxUnavailable",
		spec: appsv1.StatefulSetSpec{
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
			},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{
				MaxUnavailable: new(intstr.FromInt32(2)),
			}},
		},
		policy: abi.StatefulSetPersistentVolumeClaimPolicy{WhenDeleted: "Delete", WhenScaled: "Retain"},
		maxUn:  "2",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := snapshot.ProjectStatefulSet(&appsv1.StatefulSet{Spec: tt.spec})
			require.Equal(t, int32(1), got.Spec.Replicas)
			require.Equal(t, "RollingUpdate", got.Spec.UpdateStrategy.Type)
			require.Equal(t, &tt.policy, got.Spec.PersistentVolumeClaimRetentionPolicy)
			require.Nil(t, got.Spec.Ordinals)
			require.Nil(t, got.Spec.Selector)
			require.Equal(t, "", got.Metadata.CreationTimestamp)
			require.Equal(t, "", got.Metadata.DeletionTimestamp)
			if tt.maxUn != "" {
				require.Equal(t, tt.maxUn, got.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable)
				require.Nil(t, got.Spec.UpdateStrategy.RollingUpdate.Partition)
			}
		})
	}
	t.Run("zero replicas and OnDelete are kept", func(t *testing.T) {
		got := snapshot.ProjectStatefulSet(&appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
			Replicas:       new(int32(0)),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
		}})
		require.Equal(t, int32(0), got.Spec.Replicas)
		require.Equal(t, "OnDelete", got.Spec.UpdateStrategy.Type)
	})
}

func TestProjectPod(t *testing.T) {
	p := &corev1.Pod{
		ObjectMeta: fullMeta("default", "web-0", "p"),
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{
				Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "NotReady", Message: "m",
				LastTransitionTime: created, ObservedGeneration: 3,
			}},
		},
	}
	want := &abi.Pod{
		Metadata: wantMeta("default", "web-0", "p"),
		Spec: abi.PodSpec{
			NodeName: "node-1",
			Volumes:  []abi.PodVolume{{Name: "data", ClaimName: "data-web-0"}, {Name: "config"}},
		},
		Status: abi.PodStatus{
			Phase: "Running",
			Conditions: []abi.Condition{{
				Type: "Ready", Status: "False", Reason: "NotReady", Message: "m",
				LastTransitionTime: createdStr, ObservedGeneration: 3,
			}},
		},
	}
	require.Equal(t, want, snapshot.ProjectPod(p))
}

func TestProjectClaim(t *testing.T) {
	want := wantClaim()
	require.Equal(t, &want, snapshot.ProjectClaim(fullClaim()))
}

func TestProjectVolume(t *testing.T) {
	v := &corev1.PersistentVolume{
		ObjectMeta: fullMeta("", "pv-1", "v"),
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: qty("10Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			ClaimRef: &corev1.ObjectReference{
				APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data-web-0",
				UID: "claim-uid", ResourceVersion: "7", FieldPath: "ignored",
			},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              "fast",
			VolumeMode:                    new(corev1.PersistentVolumeFilesystem),
			VolumeAttributesClassName:     new("gold"),
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver:                    "hostpath.csi.k8s.io",
				VolumeHandle:              "vol-1",
				FSType:                    "ext4",
				ReadOnly:                  true,
				VolumeAttributes:          map[string]string{"zone": "a"},
				ControllerExpandSecretRef: &corev1.SecretReference{Namespace: "kube-system", Name: "expand"},
				NodeStageSecretRef:        &corev1.SecretReference{Namespace: "kube-system", Name: "stage"},
			}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound, Reason: "r", Message: "m"},
	}
	want := &abi.PersistentVolume{
		Metadata: wantMeta("", "pv-1", "v"),
		Spec: abi.PersistentVolumeSpec{
			Capacity:    map[string]string{"storage": "10Gi"},
			AccessModes: []string{"ReadWriteOnce"},
			ClaimRef: &abi.ObjectReference{
				APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data-web-0",
				UID: "claim-uid", ResourceVersion: "7",
			},
			PersistentVolumeReclaimPolicy: "Delete",
			StorageClassName:              "fast",
			VolumeMode:                    "Filesystem",
			VolumeAttributesClassName:     new("gold"),
			Source:                        "csi",
			CSI: &abi.CSIVolumeSource{
				Driver:                 "hostpath.csi.k8s.io",
				VolumeHandle:           "vol-1",
				FSType:                 "ext4",
				ReadOnly:               true,
				VolumeAttributes:       map[string]string{"zone": "a"},
				ControllerExpandSecret: &abi.SecretReference{Namespace: "kube-system", Name: "expand"},
			},
		},
		Status: abi.PersistentVolumeStatus{Phase: "Bound", Reason: "r", Message: "m"},
	}
	require.Equal(t, want, snapshot.ProjectVolume(v))
}

func TestProjectVolumeSource(t *testing.T) {
	tests := []struct {
		source corev1.PersistentVolumeSource
		want   string
	}{
		{corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}, "hostPath"},
		{corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{}}, "nfs"},
		{corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{}}, "local"},
		{corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{}}, "awsElasticBlockStore"},
		{corev1.PersistentVolumeSource{StorageOS: &corev1.StorageOSPersistentVolumeSource{}}, "storageos"},
		{corev1.PersistentVolumeSource{FlexVolume: &corev1.FlexPersistentVolumeSource{}}, "flexVolume"},
		{corev1.PersistentVolumeSource{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := snapshot.ProjectVolume(&corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: tt.source}})
			require.Equal(t, tt.want, got.Spec.Source)
			require.Nil(t, got.Spec.CSI)
			require.Equal(t, "Retain", got.Spec.PersistentVolumeReclaimPolicy, "API default")
		})
	}
}

func TestProjectStorageClass(t *testing.T) {
	c := &storagev1.StorageClass{
		ObjectMeta:           fullMeta("", "fast", "sc"),
		Provisioner:          "hostpath.csi.k8s.io",
		Parameters:           map[string]string{"type": "ssd"},
		ReclaimPolicy:        new(corev1.PersistentVolumeReclaimRetain),
		VolumeBindingMode:    new(storagev1.VolumeBindingWaitForFirstConsumer),
		AllowVolumeExpansion: new(true),
	}
	want := &abi.StorageClass{
		Metadata:             wantMeta("", "fast", "sc"),
		Provisioner:          "hostpath.csi.k8s.io",
		Parameters:           map[string]string{"type": "ssd"},
		ReclaimPolicy:        "Retain",
		VolumeBindingMode:    "WaitForFirstConsumer",
		AllowVolumeExpansion: true,
	}
	require.Equal(t, want, snapshot.ProjectStorageClass(c))

	defaults := snapshot.ProjectStorageClass(&storagev1.StorageClass{Provisioner: "p"})
	require.Equal(t, "Delete", defaults.ReclaimPolicy)
	require.Equal(t, "Immediate", defaults.VolumeBindingMode)
	require.False(t, defaults.AllowVolumeExpansion)
}

func claimUpdateObject(ns, name, set string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeplug.dev/v1alpha1",
		"kind":       "VolumeClaimUpdate",
		"metadata": map[string]any{
			"name": name, "namespace": ns, "uid": "vcu-" + name, "resourceVersion": "9", "generation": int64(4),
			"creationTimestamp": "2024-06-01T14:00:00+02:00",
			"managedFields":     []any{map[string]any{"manager": "kubectl"}},
		},
		"spec": map[string]any{
			"statefulSetName": set,
			"volumeClaimTemplates": []any{map[string]any{
				"metadata": map[string]any{"name": "data", "labels": map[string]any{"tier": "gold"}},
				"spec": map[string]any{
					"accessModes":      []any{"ReadWriteOnce"},
					"storageClassName": "fast",
					"resources": map[string]any{"requests": map[string]any{
						"storage":          "2048Mi",
						"example.com/iops": int64(3000),
					}},
				},
			}},
			"volumeClaimUpdateStrategy": "InPlace",
			"volumeClaimSyncStrategy":   "LockStep",
		},
		"status": map[string]any{
			"observedGeneration": int64(3),
			"volumeClaimTemplates": []any{map[string]any{
				"templateName": "data", "compatibleReplicas": int64(2), "updatingReplicas": int64(1),
				"overSizedReplicas": int64(0), "totalCapacity": map[string]any{"storage": "3072Mi"},
			}},
			"conditions": []any{map[string]any{
				"type": "Progressing", "status": "True", "reason": "Updating", "message": "m",
				"lastTransitionTime": "2024-06-01T14:00:00+02:00", "observedGeneration": int64(3),
			}},
		},
	}}
}

func TestProjectClaimUpdate(t *testing.T) {
	got, err := snapshot.ProjectClaimUpdate(claimUpdateObject("default", "web-update", "web"))
	require.NoError(t, err)
	want := &abi.VolumeClaimUpdate{
		Metadata: abi.ObjectMeta{
			Name: "web-update", Namespace: "default", UID: "vcu-web-update", ResourceVersion: "9", Generation: 4,
			CreationTimestamp: createdStr,
		},
		Spec: abi.VolumeClaimUpdateSpec{
			StatefulSetName: "web",
			VolumeClaimTemplates: []abi.PersistentVolumeClaim{{
				Metadata: abi.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "gold"}},
				Spec: abi.PersistentVolumeClaimSpec{
					AccessModes:      []string{"ReadWriteOnce"},
					StorageClassName: new("fast"),
					Resources: abi.ResourceRequirements{Requests: map[string]string{
						"storage": "2Gi", "example.com/iops": "3k",
					}},
				},
			}},
			VolumeClaimUpdateStrategy: "InPlace",
			VolumeClaimSyncStrategy:   "LockStep",
		},
		Status: abi.VolumeClaimUpdateStatus{
			ObservedGeneration: 3,
			VolumeClaimTemplates: []abi.VolumeClaimTemplateStatus{{
				TemplateName: "data", CompatibleReplicas: 2, UpdatingReplicas: 1,
				TotalCapacity: map[string]string{"storage": "3Gi"},
			}},
			Conditions: []abi.Condition{{
				Type: "Progressing", Status: "True", Reason: "Updating", Message: "m",
				LastTransitionTime: createdStr, ObservedGeneration: 3,
			}},
		},
	}
	require.Equal(t, want, got)
}

func TestProjectClaimUpdateMalformed(t *testing.T) {
	u := claimUpdateObject("default", "bad", "web")
	require.NoError(t, unstructured.SetNestedField(u.Object, "lots", "status", "observedGeneration"))
	_, err := snapshot.ProjectClaimUpdate(u)
	require.ErrorIs(t, err, snapshot.ErrBadClaimUpdate)
	require.ErrorContains(t, err, "default/bad")
}

func TestProjectNil(t *testing.T) {
	require.Nil(t, snapshot.ProjectStatefulSet(nil))
	require.Nil(t, snapshot.ProjectPod(nil))
	require.Nil(t, snapshot.ProjectClaim(nil))
	require.Nil(t, snapshot.ProjectVolume(nil))
	require.Nil(t, snapshot.ProjectStorageClass(nil))
	cu, err := snapshot.ProjectClaimUpdate(nil)
	require.NoError(t, err)
	require.Nil(t, cu)
}

// The API server does not enforce the CRD's int32 formats: a partition out
// of int32's range is refused, not narrowed into another partition.
func TestProjectClaimUpdateOverflow(t *testing.T) {
	for _, field := range []string{"heldPartition", "userPartition"} {
		u := claimUpdateObject("default", "big", "web")
		require.NoError(t, unstructured.SetNestedField(u.Object, int64(1<<32+3), "status", field))
		_, err := snapshot.ProjectClaimUpdate(u)
		require.ErrorIs(t, err, snapshot.ErrBadClaimUpdate, field)
	}
}
