package policy

import (
	"maps"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// TestStatusCounts: one claim compatible, one updating, one over-sized;
// the total is the sum of the capacities.
func TestStatusCounts(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(4, "OnDelete", "Async", "2Gi")
	c.claims[0].Spec.Resources.Requests["storage"] = "2Gi"
	c.claims[0].Status.Capacity["storage"] = "2Gi"         // compatible
	c.claims[1].Spec.Resources.Requests["storage"] = "2Gi" // updating
	c.claims[2].Spec.Resources.Requests["storage"] = "3Gi"
	c.claims[2].Status.Capacity["storage"] = "3Gi" // compatible and over-sized
	c.claims = c.claims[:3]                        // web-3's claim not created yet
	c.reconcile(t, h)
	got := c.vcu.Status.VolumeClaimTemplates
	want := abi.VolumeClaimTemplateStatus{TemplateName: "data", CompatibleReplicas: 2, UpdatingReplicas: 1, OverSizedReplicas: 1,
		TotalCapacity: map[string]string{"storage": "6Gi"}}
	if len(got) != 1 || got[0].TemplateName != want.TemplateName || got[0].CompatibleReplicas != want.CompatibleReplicas ||
		got[0].UpdatingReplicas != want.UpdatingReplicas || got[0].OverSizedReplicas != want.OverSizedReplicas ||
		!maps.Equal(got[0].TotalCapacity, want.TotalCapacity) {
		t.Errorf("status %+v, want %+v", got, want)
	}
	if c.vcu.Status.ObservedGeneration != 1 {
		t.Errorf("observedGeneration %d", c.vcu.Status.ObservedGeneration)
	}
}

// TestBlocked covers each Blocked reason: the condition, one Warning event
// on the VolumeClaimUpdate, no further replica touched, and no repeat.
func TestBlocked(t *testing.T) {
	h := sdktest.New(t)
	cases := []struct {
		name    string
		setup   func(c *cluster)
		reason  string
		applied []string // in the first round
	}{
		{"class does not allow expansion", func(c *cluster) { c.classes[0].AllowVolumeExpansion = false },
			ReasonStorageClassDoesNotAllowExpansion, nil},
		{"immutable field under LockStep", func(c *cluster) {
			c.template().Spec.AccessModes = []string{"ReadWriteOncePod"}
		}, ReasonImmutableFieldChanged, nil},
		{"expansion failed", func(c *cluster) {
			x := c.claim("data-web-2")
			x.Spec.Resources.Requests["storage"] = "2Gi"
			x.Status.AllocatedResourceStatuses = map[string]string{"storage": "ControllerResizeInfeasible"}
			x.Status.Conditions = []abi.Condition{{Type: "ControllerResizeError", Status: "True"}}
		}, ReasonClaimUpdateFailed, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(3, "InPlace", "LockStep", "2Gi")
			tc.setup(c)
			o := c.reconcile(t, h)
			if len(o.applies) != 0 {
				t.Fatalf("applied %v while blocked", o.applied())
			}
			if n := count(o.reasons(), tc.reason); n != 1 {
				t.Errorf("events %v, want one %s", o.reasons(), tc.reason)
			}
			c.wantCondition(t, ConditionBlocked, "True", tc.reason)
			c.wantCondition(t, ConditionProgressing, "Unknown", ReasonBlocked)
			if *c.vcu.Status.HeldPartition != 3 {
				t.Errorf("hold %v, want 3", c.vcu.Status.HeldPartition)
			}
			c.steady(t, h)
		})
	}
}

// TestImmutableUnderAsync: Async leaves a claim only recreation fixes and
// goes on with the next replica.
func TestImmutableUnderAsync(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(3, "InPlace", "Async", "2Gi")
	c.claim("data-web-2").Spec.StorageClassName = ptr("other")
	applied, _, _ := c.story(t, h, nil)
	if want := []string{"data-web-1", "data-web-0"}; len(applied) != 2 || applied[0] != want[0] || applied[1] != want[1] {
		t.Errorf("applied %v, want %v", applied, want)
	}
	c.wantCondition(t, ConditionProgressing, "False", ReasonWaitingForClaimRecreation)
	c.wantCondition(t, ConditionBlocked, "False", ReasonNotBlocked)
}

// TestSteadyState: nothing to do and the status as it should be gives no
// action at all, and lastTransitionTime survives a later reconcile.
func TestSteadyState(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(3, "InPlace", "LockStep", "1Gi")
	c.reconcile(t, h)
	c.wantCondition(t, ConditionProgressing, "False", ReasonComplete)
	old := now.Add(-time.Hour).Format(time.RFC3339)
	for i := range c.vcu.Status.Conditions {
		c.vcu.Status.Conditions[i].LastTransitionTime = old
	}
	c.steady(t, h)
	if got := condition(c.vcu.Status, ConditionProgressing).LastTransitionTime; got != old {
		t.Errorf("lastTransitionTime %s, want %s", got, old)
	}
}

// TestNoClaimUpdate: a set without a VolumeClaimUpdate is left alone.
func TestNoClaimUpdate(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(3, "InPlace", "LockStep", "2Gi")
	c.vcu = nil
	if res := h.MustReconcile(c.request()); len(res.Actions) != 0 {
		t.Errorf("actions %s", describe(res.Actions))
	}
}

// TestUnknownTemplate: a template the set lacks is reported once per
// generation and otherwise ignored.
func TestUnknownTemplate(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(1, "InPlace", "Async", "1Gi")
	logs := *c.template()
	logs.Metadata.Name = "logs"
	c.vcu.Spec.VolumeClaimTemplates = append(c.vcu.Spec.VolumeClaimTemplates, logs)
	o := c.reconcile(t, h)
	if count(o.reasons(), ReasonUnknownTemplate) != 1 || len(c.vcu.Status.VolumeClaimTemplates) != 1 {
		t.Fatalf("actions %s status %+v", describe(o.actions), c.vcu.Status)
	}
	c.steady(t, h)
}
