package abi

//msgp:tag json
//msgp:clearomitted

// The wire types below are projections of Kubernetes objects: only the fields
// policies need, under Kubernetes' JSON field names. Timestamps are RFC 3339
// strings, quantities are Kubernetes quantity strings ("10Gi"), and an empty
// string or zero means the field is unset.
//
// Defaults: where the API server defaults a field that the host projects and
// policies commonly read, the host fills the default in itself, so a module
// sees the same value whether or not the object went through the API server
// (objects of a `kubeplug test` case file often did not). Each such field
// says so below; they are StatefulSetSpec.Replicas (1),
// StatefulSetUpdateStrategy.Type (RollingUpdate),
// StatefulSetSpec.PersistentVolumeClaimRetentionPolicy (never nil, Retain on
// each unset field), PersistentVolumeSpec.PersistentVolumeReclaimPolicy
// (Retain), and StorageClass's ReclaimPolicy (Delete) and VolumeBindingMode
// (Immediate). Other fields reach the module as the object has them: a
// case file that leaves out podManagementPolicy gives "". The SDK's test
// builders (sdk/sdktest) apply the same defaults.

// ObjectMeta is the projection of metav1.ObjectMeta.
type ObjectMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	Generation        int64             `json:"generation,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	OwnerReferences   []OwnerReference  `json:"ownerReferences,omitempty"`
	Finalizers        []string          `json:"finalizers,omitempty"`
	CreationTimestamp string            `json:"creationTimestamp,omitempty"`
	DeletionTimestamp string            `json:"deletionTimestamp,omitempty"`
}

// OwnerReference is metav1.OwnerReference.
type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         bool   `json:"controller,omitempty"`
	BlockOwnerDeletion bool   `json:"blockOwnerDeletion,omitempty"`
}

// ResourceRequirements is corev1.VolumeResourceRequirements.
type ResourceRequirements struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// Condition is the common shape of status conditions.
type Condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
}

// StatefulSet is the projection of apps/v1 StatefulSet.
type StatefulSet struct {
	Metadata ObjectMeta        `json:"metadata"`
	Spec     StatefulSetSpec   `json:"spec"`
	Status   StatefulSetStatus `json:"status"`
}

// StatefulSetSpec is the projection of appsv1.StatefulSetSpec. Replicas is
// always set: the host applies the API default (1) when it is nil.
// PersistentVolumeClaimRetentionPolicy is never nil: a set without one gets
// Retain on both fields, the API default.
type StatefulSetSpec struct {
	Replicas                             int32                                   `json:"replicas"`
	Ordinals                             *StatefulSetOrdinals                    `json:"ordinals,omitempty"`
	Selector                             map[string]string                       `json:"selector,omitempty"`
	ServiceName                          string                                  `json:"serviceName,omitempty"`
	PodManagementPolicy                  string                                  `json:"podManagementPolicy,omitempty"`
	UpdateStrategy                       StatefulSetUpdateStrategy               `json:"updateStrategy"`
	VolumeClaimTemplates                 []PersistentVolumeClaim                 `json:"volumeClaimTemplates,omitempty"`
	PersistentVolumeClaimRetentionPolicy *StatefulSetPersistentVolumeClaimPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	RevisionHistoryLimit                 int32                                   `json:"revisionHistoryLimit,omitempty"`
	// MinReadySeconds is how long a pod must have been Ready before it
	// counts as available (ABI 1.2; 0 when unset). A pod's Ready condition
	// carries lastTransitionTime, the moment it became Ready.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
}

// StatefulSetOrdinals is appsv1.StatefulSetOrdinals.
type StatefulSetOrdinals struct {
	Start int32 `json:"start"`
}

// StatefulSetUpdateStrategy is appsv1.StatefulSetUpdateStrategy. Type is
// never empty: the host fills the API default, "RollingUpdate".
type StatefulSetUpdateStrategy struct {
	Type          string                            `json:"type,omitempty"`
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateStatefulSetStrategy is appsv1.RollingUpdateStatefulSetStrategy;
// MaxUnavailable keeps its int-or-percent string form ("1", "25%").
type RollingUpdateStatefulSetStrategy struct {
	Partition      *int32 `json:"partition,omitempty"`
	MaxUnavailable string `json:"maxUnavailable,omitempty"`
}

// StatefulSetPersistentVolumeClaimPolicy is KEP-1847's retention policy. Each
// field is "Retain" or "Delete"; the host fills the API default "Retain" in
// a field that is unset, and sends a set without a policy as Retain/Retain.
type StatefulSetPersistentVolumeClaimPolicy struct {
	WhenDeleted string `json:"whenDeleted,omitempty"`
	WhenScaled  string `json:"whenScaled,omitempty"`
}

// StatefulSetStatus is the projection of appsv1.StatefulSetStatus.
type StatefulSetStatus struct {
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	Replicas           int32  `json:"replicas"`
	ReadyReplicas      int32  `json:"readyReplicas,omitempty"`
	CurrentReplicas    int32  `json:"currentReplicas,omitempty"`
	UpdatedReplicas    int32  `json:"updatedReplicas,omitempty"`
	AvailableReplicas  int32  `json:"availableReplicas,omitempty"`
	CurrentRevision    string `json:"currentRevision,omitempty"`
	UpdateRevision     string `json:"updateRevision,omitempty"`
}

// Pod is the projection of v1 Pod.
type Pod struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     PodSpec    `json:"spec"`
	Status   PodStatus  `json:"status"`
}

// PodSpec is the projection of corev1.PodSpec.
type PodSpec struct {
	NodeName string      `json:"nodeName,omitempty"`
	Volumes  []PodVolume `json:"volumes,omitempty"`
}

// PodVolume is a pod volume; ClaimName is set for persistentVolumeClaim
// volumes and empty otherwise.
type PodVolume struct {
	Name      string `json:"name"`
	ClaimName string `json:"claimName,omitempty"`
}

// PodStatus is the projection of corev1.PodStatus.
type PodStatus struct {
	Phase      string      `json:"phase,omitempty"`
	Conditions []Condition `json:"conditions,omitempty"`
}

// PersistentVolumeClaim is the projection of v1 PersistentVolumeClaim. It is
// also the shape of a StatefulSet's volume claim template.
type PersistentVolumeClaim struct {
	Metadata ObjectMeta                  `json:"metadata"`
	Spec     PersistentVolumeClaimSpec   `json:"spec"`
	Status   PersistentVolumeClaimStatus `json:"status"`
}

// PersistentVolumeClaimSpec is the projection of corev1.PersistentVolumeClaimSpec.
type PersistentVolumeClaimSpec struct {
	AccessModes               []string             `json:"accessModes,omitempty"`
	Resources                 ResourceRequirements `json:"resources"`
	StorageClassName          *string              `json:"storageClassName,omitempty"`
	VolumeName                string               `json:"volumeName,omitempty"`
	VolumeMode                string               `json:"volumeMode,omitempty"`
	VolumeAttributesClassName *string              `json:"volumeAttributesClassName,omitempty"`
}

// PersistentVolumeClaimStatus is the projection of corev1.PersistentVolumeClaimStatus.
type PersistentVolumeClaimStatus struct {
	Phase                            string            `json:"phase,omitempty"`
	AccessModes                      []string          `json:"accessModes,omitempty"`
	Capacity                         map[string]string `json:"capacity,omitempty"`
	Conditions                       []Condition       `json:"conditions,omitempty"`
	AllocatedResources               map[string]string `json:"allocatedResources,omitempty"`
	AllocatedResourceStatuses        map[string]string `json:"allocatedResourceStatuses,omitempty"`
	CurrentVolumeAttributesClassName *string           `json:"currentVolumeAttributesClassName,omitempty"`
}

// PersistentVolume is the projection of v1 PersistentVolume.
type PersistentVolume struct {
	Metadata ObjectMeta             `json:"metadata"`
	Spec     PersistentVolumeSpec   `json:"spec"`
	Status   PersistentVolumeStatus `json:"status"`
}

// PersistentVolumeSpec is the projection of corev1.PersistentVolumeSpec.
// Source names the volume source that is set, by its JSON field name ("csi",
// "hostPath", "nfs", "awsElasticBlockStore", ...); CSI is filled for "csi".
// PersistentVolumeReclaimPolicy is never empty: the host fills the API
// default, "Retain".
type PersistentVolumeSpec struct {
	Capacity                      map[string]string `json:"capacity,omitempty"`
	AccessModes                   []string          `json:"accessModes,omitempty"`
	ClaimRef                      *ObjectReference  `json:"claimRef,omitempty"`
	PersistentVolumeReclaimPolicy string            `json:"persistentVolumeReclaimPolicy,omitempty"`
	StorageClassName              string            `json:"storageClassName,omitempty"`
	VolumeMode                    string            `json:"volumeMode,omitempty"`
	VolumeAttributesClassName     *string           `json:"volumeAttributesClassName,omitempty"`
	Source                        string            `json:"source,omitempty"`
	CSI                           *CSIVolumeSource  `json:"csi,omitempty"`
}

// ObjectReference is the projection of corev1.ObjectReference used by claimRef.
type ObjectReference struct {
	APIVersion      string `json:"apiVersion,omitempty"`
	Kind            string `json:"kind,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// CSIVolumeSource is the projection of corev1.CSIPersistentVolumeSource.
// Secret references are namespace/name pairs.
type CSIVolumeSource struct {
	Driver                 string            `json:"driver"`
	VolumeHandle           string            `json:"volumeHandle"`
	FSType                 string            `json:"fsType,omitempty"`
	ReadOnly               bool              `json:"readOnly,omitempty"`
	VolumeAttributes       map[string]string `json:"volumeAttributes,omitempty"`
	ControllerExpandSecret *SecretReference  `json:"controllerExpandSecretRef,omitempty"`
}

// SecretReference names a Secret.
type SecretReference struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// PersistentVolumeStatus is the projection of corev1.PersistentVolumeStatus.
type PersistentVolumeStatus struct {
	Phase   string `json:"phase,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// StorageClass is the projection of storage.k8s.io/v1 StorageClass.
// ReclaimPolicy and VolumeBindingMode are never empty: the host fills the
// API defaults, "Delete" and "Immediate".
type StorageClass struct {
	Metadata             ObjectMeta        `json:"metadata"`
	Provisioner          string            `json:"provisioner"`
	Parameters           map[string]string `json:"parameters,omitempty"`
	ReclaimPolicy        string            `json:"reclaimPolicy,omitempty"`
	VolumeBindingMode    string            `json:"volumeBindingMode,omitempty"`
	AllowVolumeExpansion bool              `json:"allowVolumeExpansion,omitempty"`
}

// VolumeClaimUpdate is kubeplug.dev/v1alpha1 VolumeClaimUpdate: the desired
// claim templates of a StatefulSet and how its claims follow them (KEP-4650).
type VolumeClaimUpdate struct {
	Metadata ObjectMeta              `json:"metadata"`
	Spec     VolumeClaimUpdateSpec   `json:"spec"`
	Status   VolumeClaimUpdateStatus `json:"status"`
}

// VolumeClaimUpdateSpec is the desired state of a VolumeClaimUpdate.
type VolumeClaimUpdateSpec struct {
	StatefulSetName           string                  `json:"statefulSetName"`
	VolumeClaimTemplates      []PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	VolumeClaimUpdateStrategy string                  `json:"volumeClaimUpdateStrategy,omitempty"`
	VolumeClaimSyncStrategy   string                  `json:"volumeClaimSyncStrategy,omitempty"`
}

// VolumeClaimUpdateStatus carries KEP-4650's per-template counts and conditions.
type VolumeClaimUpdateStatus struct {
	ObservedGeneration   int64                       `json:"observedGeneration,omitempty"`
	VolumeClaimTemplates []VolumeClaimTemplateStatus `json:"volumeClaimTemplates,omitempty"`
	Conditions           []Condition                 `json:"conditions,omitempty"`
	// HeldPartition is the StatefulSet's rollingUpdate.partition as the
	// module last set it to hold the pod rollout (LockStep); nil when it
	// holds none.
	HeldPartition *int32 `json:"heldPartition,omitempty"`
	// UserPartition is the partition the user had set when the module began
	// holding it (nil for none, which the API reads as 0): the value it is
	// returned to when the hold ends.
	UserPartition *int32 `json:"userPartition,omitempty"`
}

// VolumeClaimTemplateStatus counts the claims of one template.
type VolumeClaimTemplateStatus struct {
	TemplateName       string            `json:"templateName"`
	CompatibleReplicas int32             `json:"compatibleReplicas"`
	UpdatingReplicas   int32             `json:"updatingReplicas"`
	OverSizedReplicas  int32             `json:"overSizedReplicas"`
	TotalCapacity      map[string]string `json:"totalCapacity,omitempty"`
}
