package snapshot

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kubeplug/kubeplug/abi"
)

// claimUpdateObject mirrors the VolumeClaimUpdate CRD with Kubernetes types,
// so that decoding parses quantities (string or number) and timestamps
// the way the API does, and the projection then renders them exactly like
// those of built-in objects. A module comparing a template's "1024Mi" with a
// claim's "1Gi" sees the same canonical string on both sides.
type claimUpdateObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		StatefulSetName           string                         `json:"statefulSetName"`
		VolumeClaimTemplates      []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates"`
		VolumeClaimUpdateStrategy string                         `json:"volumeClaimUpdateStrategy"`
		VolumeClaimSyncStrategy   string                         `json:"volumeClaimSyncStrategy"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration   int64 `json:"observedGeneration"`
		VolumeClaimTemplates []struct {
			TemplateName       string              `json:"templateName"`
			CompatibleReplicas int32               `json:"compatibleReplicas"`
			UpdatingReplicas   int32               `json:"updatingReplicas"`
			OverSizedReplicas  int32               `json:"overSizedReplicas"`
			TotalCapacity      corev1.ResourceList `json:"totalCapacity"`
		} `json:"volumeClaimTemplates"`
		Conditions    []metav1.Condition `json:"conditions"`
		HeldPartition *int32             `json:"heldPartition"`
		UserPartition *int32             `json:"userPartition"`
	} `json:"status"`
}

// ProjectClaimUpdate projects a kubeplug.dev/v1alpha1 VolumeClaimUpdate onto
// the abi type, nil for nil. Quantities and timestamps are rendered like
// those of built-in objects. It fails with ErrBadClaimUpdate when a field
// has the wrong type, e.g. a quantity that does not parse.
func ProjectClaimUpdate(u *unstructured.Unstructured) (*abi.VolumeClaimUpdate, error) {
	if u == nil {
		return nil, nil
	}
	// Decoded from JSON as the API server decodes (case-sensitive keys),
	// not with runtime's converter, which narrows an integer silently: the
	// API server does not enforce the CRD's int32 formats
	// (kubernetes/kubernetes#136091), so status.heldPartition 4294967299
	// would reach the module as 3.
	var o claimUpdateObject
	data, err := json.Marshal(u.Object)
	if err == nil {
		err = utiljson.Unmarshal(data, &o)
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s/%s: %v", ErrBadClaimUpdate, u.GetNamespace(), u.GetName(), err)
	}
	out := new(abi.VolumeClaimUpdate)
	projectMeta(&out.Metadata, &o.ObjectMeta)

	out.Spec.StatefulSetName = o.Spec.StatefulSetName
	out.Spec.VolumeClaimUpdateStrategy = o.Spec.VolumeClaimUpdateStrategy
	out.Spec.VolumeClaimSyncStrategy = o.Spec.VolumeClaimSyncStrategy
	out.Spec.VolumeClaimTemplates = projectEach(o.Spec.VolumeClaimTemplates, projectClaim)

	out.Status.ObservedGeneration = o.Status.ObservedGeneration
	out.Status.HeldPartition = o.Status.HeldPartition
	out.Status.UserPartition = o.Status.UserPartition
	if n := len(o.Status.VolumeClaimTemplates); n > 0 {
		out.Status.VolumeClaimTemplates = make([]abi.VolumeClaimTemplateStatus, n)
		for i := range o.Status.VolumeClaimTemplates {
			t := &o.Status.VolumeClaimTemplates[i]
			out.Status.VolumeClaimTemplates[i] = abi.VolumeClaimTemplateStatus{
				TemplateName:       t.TemplateName,
				CompatibleReplicas: t.CompatibleReplicas,
				UpdatingReplicas:   t.UpdatingReplicas,
				OverSizedReplicas:  t.OverSizedReplicas,
				TotalCapacity:      projectResources(t.TotalCapacity),
			}
		}
	}
	out.Status.Conditions = projectEach(o.Status.Conditions, func(d *abi.Condition, c *metav1.Condition) {
		*d = abi.Condition{
			Type:               c.Type,
			Status:             string(c.Status),
			Reason:             c.Reason,
			Message:            c.Message,
			LastTransitionTime: formatTime(c.LastTransitionTime),
			ObservedGeneration: c.ObservedGeneration,
		}
	})
	return out, nil
}
