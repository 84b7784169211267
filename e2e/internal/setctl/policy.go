package setctl

import appsv1 "k8s.io/api/apps/v1"

// The retention policy values, for brevity.
const (
	Retain = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	Delete = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
)

// Policy is a StatefulSet's spec.persistentVolumeClaimRetentionPolicy with
// the API's default, Retain, for each field left unset.
type Policy struct {
	WhenDeleted appsv1.PersistentVolumeClaimRetentionPolicyType
	WhenScaled  appsv1.PersistentVolumeClaimRetentionPolicyType
}

// PolicyOf returns set's policy.
func PolicyOf(set *appsv1.StatefulSet) Policy {
	p := Policy{WhenDeleted: Retain, WhenScaled: Retain}
	if sp := set.Spec.PersistentVolumeClaimRetentionPolicy; sp != nil {
		if sp.WhenDeleted != "" {
			p.WhenDeleted = sp.WhenDeleted
		}
		if sp.WhenScaled != "" {
			p.WhenScaled = sp.WhenScaled
		}
	}
	return p
}

// String is the policy as whenDeleted/whenScaled, e.g. "Delete/Retain".
func (p Policy) String() string { return string(p.WhenDeleted) + "/" + string(p.WhenScaled) }

// Name is the policy as whenDeleted-whenScaled, e.g. "Delete-Retain": a
// String fit for a subtest's name, which "/" would split.
func (p Policy) Name() string { return string(p.WhenDeleted) + "-" + string(p.WhenScaled) }

// Spec is p as the StatefulSet field.
func (p Policy) Spec() *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	return &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: p.WhenDeleted, WhenScaled: p.WhenScaled}
}

// Policies returns the four policies, every combination of Retain and
// Delete: each test of KEP-1847 runs under all of them.
func Policies() []Policy {
	return []Policy{
		{WhenDeleted: Delete, WhenScaled: Delete},
		{WhenDeleted: Retain, WhenScaled: Delete},
		{WhenDeleted: Delete, WhenScaled: Retain},
		{WhenDeleted: Retain, WhenScaled: Retain},
	}
}
