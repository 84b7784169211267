// Command staleshrink is a test fixture of kubeplug check, with a
// stale-read bug on purpose: do not use it.
//
// It sets each claim's storage request to its template's in the set's
// VolumeClaimUpdate, up or down, on the VolumeClaimUpdate its cache holds.
// The host lets it lower a request it raised while the request stays above
// the claim's capacity (a failed expansion is recovered that way). A cache
// behind the user's last raise of the template lowers the request back to
// the template before it: the expansion in flight is cancelled, though
// every run ends with the same request once the cache catches up.
package main

import (
	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/check/testdata/guests/internal/fixture"
	"github.com/kubeplug/kubeplug/sdk"
)

func init() {
	fixture.Register("staleshrink", "follows a stale template down, cancelling an expansion in flight",
		[]abi.Capability{{Action: abi.ActionApplyClaim, Resources: []string{"persistentvolumeclaims"}}}, decide)
}

func main() {}

func decide(req *sdk.Request, set *abi.StatefulSet, _ int, c *abi.PersistentVolumeClaim) []abi.Action {
	u := req.ClaimUpdate()
	template, _, _ := sdk.MatchClaim(set, c.Metadata.Name)
	if u == nil || c.Metadata.DeletionTimestamp != "" {
		return nil
	}
	for _, t := range u.Spec.VolumeClaimTemplates {
		want, have := t.Spec.Resources.Requests["storage"], c.Spec.Resources.Requests["storage"]
		if t.Metadata.Name != template || want == "" || sdk.MustParseQuantity(want).Cmp(sdk.MustParseQuantity(have)) == 0 {
			continue
		}
		return []abi.Action{sdk.ApplyClaim(sdk.RefOf(c), abi.ClaimApply{Resources: &abi.ResourceRequirements{Requests: map[string]string{"storage": want}}})}
	}
	return nil
}
