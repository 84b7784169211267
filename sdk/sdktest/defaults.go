package sdktest

import "github.com/kubeplug/kubeplug/abi"

// The host's snapshot fills in the API defaults below whether or not the
// object went through the API server (objects of a `kubeplug test` case file
// often did not), so a module never sees these fields empty. The builders and
// Request fill in the same ones, so that a module's native tests see what the
// host sends; abi/objects.go documents each on its field, and a test in the
// host's snapshot package holds the two together.
//
// Replicas is the one default they cannot apply: the wire's 0 is also the
// value of a set scaled to zero, so StatefulSet takes the count explicitly.
const (
	defaultRetention        = "Retain"        // each field of persistentVolumeClaimRetentionPolicy
	defaultUpdateStrategy   = "RollingUpdate" // a StatefulSet's updateStrategy.type
	defaultVolumeReclaim    = "Retain"        // a PersistentVolume's persistentVolumeReclaimPolicy
	defaultClassReclaim     = "Delete"        // a StorageClass's reclaimPolicy
	defaultClassBindingMode = "Immediate"     // a StorageClass's volumeBindingMode
)

// defaultStatefulSet fills in s's unset defaulted fields. It replaces the
// retention policy rather than writing through it: the policy may be shared
// with the caller's copy.
func defaultStatefulSet(s *abi.StatefulSet) {
	p := abi.StatefulSetPersistentVolumeClaimPolicy{WhenDeleted: defaultRetention, WhenScaled: defaultRetention}
	if old := s.Spec.PersistentVolumeClaimRetentionPolicy; old != nil {
		p.WhenDeleted = or(old.WhenDeleted, defaultRetention)
		p.WhenScaled = or(old.WhenScaled, defaultRetention)
	}
	s.Spec.PersistentVolumeClaimRetentionPolicy = &p
	s.Spec.UpdateStrategy.Type = or(s.Spec.UpdateStrategy.Type, defaultUpdateStrategy)
}

// defaultVolume fills in pv's unset defaulted fields.
func defaultVolume(pv *abi.PersistentVolume) {
	pv.Spec.PersistentVolumeReclaimPolicy = or(pv.Spec.PersistentVolumeReclaimPolicy, defaultVolumeReclaim)
}

// defaultStorageClass fills in sc's unset defaulted fields.
func defaultStorageClass(sc *abi.StorageClass) {
	sc.ReclaimPolicy = or(sc.ReclaimPolicy, defaultClassReclaim)
	sc.VolumeBindingMode = or(sc.VolumeBindingMode, defaultClassBindingMode)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
