package snapshot

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubeplug/kubeplug/abi"
)

// API defaults the StatefulSet projection fills in, so that a module sees the
// same values whether or not the object went through API server defaulting
// (objects in `kubeplug test` case files often did not).
const (
	defaultReplicas       = 1
	defaultRetention      = string(appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
	defaultUpdateStrategy = string(appsv1.RollingUpdateStatefulSetStrategyType)
)

// ProjectStatefulSet projects s onto the abi type, nil for nil. Replicas
// defaults to 1, the update strategy type to RollingUpdate, and the claim
// retention policy is always set with unset fields as Retain. The selector
// is its matchLabels; matchExpressions are not projected.
func ProjectStatefulSet(s *appsv1.StatefulSet) *abi.StatefulSet {
	if s == nil {
		return nil
	}
	out := new(abi.StatefulSet)
	projectMeta(&out.Metadata, &s.ObjectMeta)

	spec := &out.Spec
	spec.Replicas = defaultReplicas
	if s.Spec.Replicas != nil {
		spec.Replicas = *s.Spec.Replicas
	}
	if s.Spec.Ordinals != nil {
		spec.Ordinals = &abi.StatefulSetOrdinals{Start: s.Spec.Ordinals.Start}
	}
	if s.Spec.Selector != nil {
		spec.Selector = s.Spec.Selector.MatchLabels
	}
	spec.ServiceName = s.Spec.ServiceName
	spec.PodManagementPolicy = string(s.Spec.PodManagementPolicy)
	spec.UpdateStrategy.Type = string(s.Spec.UpdateStrategy.Type)
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = defaultUpdateStrategy
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		r := &abi.RollingUpdateStatefulSetStrategy{}
		if ru.Partition != nil {
			p := *ru.Partition
			r.Partition = &p
		}
		if ru.MaxUnavailable != nil {
			r.MaxUnavailable = ru.MaxUnavailable.String()
		}
		spec.UpdateStrategy.RollingUpdate = r
	}
	spec.VolumeClaimTemplates = projectEach(s.Spec.VolumeClaimTemplates, projectClaim)
	policy := &abi.StatefulSetPersistentVolumeClaimPolicy{WhenDeleted: defaultRetention, WhenScaled: defaultRetention}
	if p := s.Spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		if p.WhenDeleted != "" {
			policy.WhenDeleted = string(p.WhenDeleted)
		}
		if p.WhenScaled != "" {
			policy.WhenScaled = string(p.WhenScaled)
		}
	}
	spec.PersistentVolumeClaimRetentionPolicy = policy
	if s.Spec.RevisionHistoryLimit != nil {
		spec.RevisionHistoryLimit = *s.Spec.RevisionHistoryLimit
	}
	spec.MinReadySeconds = s.Spec.MinReadySeconds

	out.Status = abi.StatefulSetStatus{
		ObservedGeneration: s.Status.ObservedGeneration,
		Replicas:           s.Status.Replicas,
		ReadyReplicas:      s.Status.ReadyReplicas,
		CurrentReplicas:    s.Status.CurrentReplicas,
		UpdatedReplicas:    s.Status.UpdatedReplicas,
		AvailableReplicas:  s.Status.AvailableReplicas,
		CurrentRevision:    s.Status.CurrentRevision,
		UpdateRevision:     s.Status.UpdateRevision,
	}
	return out
}

// ProjectPod projects p onto the abi type, nil for nil.
func ProjectPod(p *corev1.Pod) *abi.Pod {
	if p == nil {
		return nil
	}
	out := new(abi.Pod)
	projectPod(out, p)
	return out
}

func projectPod(dst *abi.Pod, p *corev1.Pod) {
	projectMeta(&dst.Metadata, &p.ObjectMeta)
	dst.Spec.NodeName = p.Spec.NodeName
	dst.Spec.Volumes = projectEach(p.Spec.Volumes, func(d *abi.PodVolume, v *corev1.Volume) {
		d.Name = v.Name
		if v.PersistentVolumeClaim != nil {
			d.ClaimName = v.PersistentVolumeClaim.ClaimName
		}
	})
	dst.Status.Phase = string(p.Status.Phase)
	dst.Status.Conditions = projectEach(p.Status.Conditions, func(d *abi.Condition, c *corev1.PodCondition) {
		*d = abi.Condition{
			Type:               string(c.Type),
			Status:             string(c.Status),
			Reason:             c.Reason,
			Message:            c.Message,
			LastTransitionTime: formatTime(c.LastTransitionTime),
			ObservedGeneration: c.ObservedGeneration,
		}
	})
}
