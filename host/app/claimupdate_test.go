package app

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/controller"
)

// TestClaimUpdateModules: a host whose API server lacks the CRD names the
// modules granted VolumeClaimUpdate status writes, and only those.
func TestClaimUpdateModules(t *testing.T) {
	mods := []loaded{
		{mod: controller.Module{Name: "retention", Allowed: []abi.Capability{{Action: abi.ActionUpdateOwnerReferences, Resources: []string{"persistentvolumeclaims"}}}}},
		{mod: controller.Module{Name: "templateupdate", Allowed: []abi.Capability{
			{Action: abi.ActionApplyClaim, Resources: []string{"persistentvolumeclaims"}},
			{Action: abi.ActionUpdateClaimUpdateStatus, Resources: []string{"volumeclaimupdates"}},
		}}},
	}
	require.Equal(t, []string{"templateupdate"}, claimUpdateModules(false, mods))
	require.Empty(t, claimUpdateModules(true, mods), "nothing to say when the CRD is served")
}
