package policy

import (
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// TestOtherClaimUpdatesNotInEffect: a VolumeClaimUpdate that names the set
// but is not in effect is told so once (Blocked NotInEffect naming the one
// in effect, Progressing Unknown, one Warning), and then left alone; one
// being deleted is not written to.
func TestOtherClaimUpdatesNotInEffect(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(2, "InPlace", "Async", "2Gi")
	c.vcu.Metadata.CreationTimestamp = "2025-12-30T00:00:00Z"
	other := *c.vcu
	other.Metadata = abi.ObjectMeta{Name: "a-other", Namespace: "default", UID: "other-uid", ResourceVersion: "1", Generation: 3, CreationTimestamp: "2025-12-31T00:00:00Z"}
	gone := other
	gone.Metadata.Name, gone.Metadata.UID, gone.Metadata.DeletionTimestamp = "b-gone", "gone-uid", "2025-12-31T12:00:00Z"
	req := func() *abi.ReconcileRequest {
		return deepCopy(sdktest.Request(now, c.set, c.pods, c.claims, c.classes, c.vcu, &other, &gone))
	}

	res := h.MustReconcile(req())
	var status *abi.VolumeClaimUpdateStatus
	warnings := 0
	for _, a := range res.Actions {
		switch {
		case a.Target.Name == "b-gone":
			t.Fatalf("%s on a VolumeClaimUpdate being deleted", a.Type)
		case a.Target.Name != "a-other":
		case a.Type == abi.ActionUpdateClaimUpdateStatus:
			status = a.ClaimUpdateStatus
		case a.Type == abi.ActionEvent && a.Event.Reason == ReasonNotInEffect:
			warnings++
		}
	}
	if status == nil || warnings != 1 {
		t.Fatalf("actions %s: want a status and one NotInEffect warning for a-other", describe(res.Actions))
	}
	blocked, progressing := condition(*status, ConditionBlocked), condition(*status, ConditionProgressing)
	if blocked.Status != "True" || blocked.Reason != ReasonNotInEffect || !strings.Contains(blocked.Message, "VolumeClaimUpdate web-data is") {
		t.Errorf("Blocked %+v, want True NotInEffect naming web-data", blocked)
	}
	if progressing.Status != "Unknown" || progressing.Reason != ReasonBlocked || status.ObservedGeneration != 3 {
		t.Errorf("Progressing %+v at generation %d, want Unknown Blocked at 3", progressing, status.ObservedGeneration)
	}

	other.Status = *status
	for _, a := range h.MustReconcile(req()).Actions {
		if a.Target.Name == "a-other" {
			t.Fatalf("%s on a-other once it says it is not in effect", a.Type)
		}
	}
}
