package policy

import "github.com/kubeplug/kubeplug/abi"

// Values of whenDeleted and whenScaled.
const (
	retain = "Retain"
	del    = "Delete"
)

// policy is a StatefulSet's persistentVolumeClaimRetentionPolicy with the API
// defaults applied. A value other than Retain or Delete (the API server
// refuses them, but a hand-written object may carry one) is kept as it is:
// upstream treats the policy as Retain when it decides which references a
// claim gets, yet as "not Retain" when it looks for conflicting controllers,
// and this module does the same.
type policy struct {
	whenDeleted string
	whenScaled  string
}

// getPersistentVolumeClaimRetentionPolicy mirrors its upstream namesake: the
// set's policy, Retain for each field it leaves unset. Upstream takes a
// policy that is present as it is, because the API server's defaulting
// (SetDefaults_StatefulSet) has already set each empty field to Retain; the
// module does that defaulting itself, so that a hand-written object in a
// case file means what it would mean after `kubectl apply`.
func getPersistentVolumeClaimRetentionPolicy(set *abi.StatefulSet) policy {
	p := policy{whenDeleted: retain, whenScaled: retain}
	if sp := set.Spec.PersistentVolumeClaimRetentionPolicy; sp != nil {
		if sp.WhenDeleted != "" {
			p.whenDeleted = sp.WhenDeleted
		}
		if sp.WhenScaled != "" {
			p.whenScaled = sp.WhenScaled
		}
	}
	return p
}

// retainsAll reports whether both fields are Retain: upstream's test for
// "a different controller managing the claims is not a problem".
func (p policy) retainsAll() bool { return p.whenDeleted == retain && p.whenScaled == retain }

// known reports whether both fields are Retain or Delete. Upstream logs an
// unknown policy and treats it as Retain on both.
func (p policy) known() bool {
	return (p.whenDeleted == retain || p.whenDeleted == del) && (p.whenScaled == retain || p.whenScaled == del)
}
