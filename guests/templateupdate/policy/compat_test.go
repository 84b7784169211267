package policy

import (
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// TestCompatible checks each clause of KEP-4650's "What PVC is compatible",
// through the status count of a one-replica set (OnDelete: nothing else
// happens).
func TestCompatible(t *testing.T) {
	h := sdktest.New(t)
	cases := []struct {
		name     string
		template func(t *abi.PersistentVolumeClaim)
		claim    func(c *abi.PersistentVolumeClaim)
		want     bool
	}{
		{"same", nil, nil, true},
		{"access modes as a set", func(t *abi.PersistentVolumeClaim) { t.Spec.AccessModes = []string{"ReadWriteOnce", "ReadOnlyMany"} },
			func(c *abi.PersistentVolumeClaim) { c.Spec.AccessModes = []string{"ReadOnlyMany", "ReadWriteOnce"} }, true},
		{"access modes differ", func(t *abi.PersistentVolumeClaim) { t.Spec.AccessModes = []string{"ReadWriteOncePod"} }, nil, false},
		{"class differs", func(t *abi.PersistentVolumeClaim) { t.Spec.StorageClassName = ptr("slow") }, nil, false},
		{"template without class matches any", func(t *abi.PersistentVolumeClaim) { t.Spec.StorageClassName = nil }, nil, true},
		{"volume mode unset is Filesystem", func(t *abi.PersistentVolumeClaim) { t.Spec.VolumeMode = "" }, nil, true},
		{"volume mode differs", func(t *abi.PersistentVolumeClaim) { t.Spec.VolumeMode = "Block" }, nil, false},
		{"template label missing", func(t *abi.PersistentVolumeClaim) { t.Metadata.Labels = map[string]string{"tier": "gold"} }, nil, false},
		{"claim labels a superset", func(t *abi.PersistentVolumeClaim) { t.Metadata.Labels = map[string]string{"tier": "gold"} },
			func(c *abi.PersistentVolumeClaim) { c.Metadata.Labels["tier"] = "gold" }, true},
		{"label value differs", func(t *abi.PersistentVolumeClaim) { t.Metadata.Labels = map[string]string{"tier": "gold"} },
			func(c *abi.PersistentVolumeClaim) { c.Metadata.Labels["tier"] = "silver" }, false},
		{"template annotation missing", func(t *abi.PersistentVolumeClaim) { t.Metadata.Annotations = map[string]string{"backup": "daily"} }, nil, false},
		{"claim annotations a superset", func(t *abi.PersistentVolumeClaim) { t.Metadata.Annotations = map[string]string{"backup": "daily"} },
			func(c *abi.PersistentVolumeClaim) {
				c.Metadata.Annotations = map[string]string{"backup": "daily", "mine": "x"}
			}, true},
		{"capacity below request", func(t *abi.PersistentVolumeClaim) { t.Spec.Resources.Requests["storage"] = "2Gi" }, nil, false},
		{"capacity above request", nil, func(c *abi.PersistentVolumeClaim) { c.Status.Capacity["storage"] = "5Gi" }, true},
		{"capacity equal in other units", nil, func(c *abi.PersistentVolumeClaim) { c.Status.Capacity["storage"] = "1024Mi" }, true},
		{"spec request alone is not enough", func(t *abi.PersistentVolumeClaim) { t.Spec.Resources.Requests["storage"] = "2Gi" },
			func(c *abi.PersistentVolumeClaim) { c.Spec.Resources.Requests["storage"] = "2Gi" }, false},
		{"no capacity", nil, func(c *abi.PersistentVolumeClaim) { c.Status.Capacity = nil }, false},
		{"current class equal", func(t *abi.PersistentVolumeClaim) { t.Spec.VolumeAttributesClassName = ptr("gold") },
			func(c *abi.PersistentVolumeClaim) { c.Status.CurrentVolumeAttributesClassName = ptr("gold") }, true},
		{"only the spec has the class", func(t *abi.PersistentVolumeClaim) { t.Spec.VolumeAttributesClassName = ptr("gold") },
			func(c *abi.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = ptr("gold") }, false},
		{"claim has a class the template lacks", nil,
			func(c *abi.PersistentVolumeClaim) { c.Status.CurrentVolumeAttributesClassName = ptr("gold") }, false},
		{"unset class equals empty", func(t *abi.PersistentVolumeClaim) { t.Spec.VolumeAttributesClassName = ptr("") }, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(1, "OnDelete", "Async", "1Gi")
			if tc.template != nil {
				tc.template(c.template())
			}
			if tc.claim != nil {
				tc.claim(c.claims[0])
			}
			c.reconcile(t, h)
			want := int32(0)
			if tc.want {
				want = 1
			}
			if got := c.vcu.Status.VolumeClaimTemplates[0].CompatibleReplicas; got != want {
				t.Errorf("compatibleReplicas = %d, want %d", got, want)
			}
		})
	}
}

// TestStorageRule checks that an in-place update asks for the largest of
// template, claim spec and claim status, and never lowers a request.
func TestStorageRule(t *testing.T) {
	h := sdktest.New(t)
	cases := []struct {
		name            string
		template        string
		spec, capacity  string
		want            string // "" for no storage in the apply
		wantApply       bool
		wantOverSized   int32
		wantCompatible  int32
		wantProgressing string
		wantProgressWhy string
	}{
		{"grow to the template", "2Gi", "1Gi", "1Gi", "2Gi", true, 0, 0, "True", ReasonClaimsUpdating},
		{"never lower", "1Gi", "3Gi", "3Gi", "", false, 1, 1, "False", ReasonComplete},
		{"user's in-flight manual expansion kept", "2Gi", "5Gi", "1Gi", "", false, 0, 0, "True", ReasonClaimsUpdating},
		{"capacity above spec and template", "2Gi", "1Gi", "4Gi", "", false, 1, 1, "False", ReasonComplete},
		{"capacity above spec, below template", "3Gi", "1Gi", "2Gi", "3Gi", true, 0, 0, "True", ReasonClaimsUpdating},
		{"over-sized is compatible", "1Gi", "1Gi", "2Gi", "", false, 1, 1, "False", ReasonComplete},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(1, "InPlace", "Async", tc.template)
			c.claims[0].Spec.Resources.Requests["storage"] = tc.spec
			c.claims[0].Status.Capacity["storage"] = tc.capacity
			o := c.reconcile(t, h)
			if got := len(o.applies) > 0; got != tc.wantApply {
				t.Fatalf("applied = %v, want %v: %s", got, tc.wantApply, describe(o.actions))
			}
			if tc.wantApply {
				if got := o.applies[0].Claim.Resources.Requests["storage"]; got != tc.want {
					t.Errorf("applied storage %q, want %q", got, tc.want)
				}
			}
			st := c.vcu.Status.VolumeClaimTemplates[0]
			if st.OverSizedReplicas != tc.wantOverSized || st.CompatibleReplicas != tc.wantCompatible {
				t.Errorf("overSized %d compatible %d, want %d %d", st.OverSizedReplicas, st.CompatibleReplicas, tc.wantOverSized, tc.wantCompatible)
			}
			c.settle(t, h)
			c.wantCondition(t, ConditionProgressing, tc.wantProgressing, tc.wantProgressWhy)
		})
	}
}

// TestUserLabelsKept: the apply carries only the template's keys, so a
// user's own label stays (server-side apply owns only what it sends).
func TestUserLabelsKept(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(1, "InPlace", "Async", "1Gi")
	c.template().Metadata.Labels = map[string]string{"tier": "gold"}
	c.claims[0].Metadata.Labels["mine"] = "yes"
	o := c.reconcile(t, h)
	if len(o.applies) != 1 {
		t.Fatalf("applies: %s", describe(o.actions))
	}
	a := o.applies[0].Claim
	// The unchanged size goes along: the field manager keeps what it owns.
	if len(a.Labels) != 1 || a.Labels["tier"] != "gold" || a.Resources.Requests["storage"] != "1Gi" || a.VolumeAttributesClassName != nil {
		t.Errorf("apply = %+v, want label tier=gold and the claim's own 1Gi", a)
	}
	if o.reasons()[0] != ReasonClaimUpdating {
		t.Errorf("events %v", o.reasons())
	}
	if c.claims[0].Metadata.Labels["mine"] != "yes" {
		t.Error("user label lost")
	}
	c.settle(t, h)
	c.wantCondition(t, ConditionProgressing, "False", ReasonComplete)
}

// TestVolumeAttributesClass: a class is applied in place and is in flight
// until the volume has it.
func TestVolumeAttributesClass(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(1, "InPlace", "Async", "1Gi")
	c.template().Spec.VolumeAttributesClassName = ptr("gold")
	o := c.reconcile(t, h)
	if len(o.applies) != 1 || *o.applies[0].Claim.VolumeAttributesClassName != "gold" {
		t.Fatalf("applies: %s", describe(o.actions))
	}
	c.reconcile(t, h)
	if got := c.vcu.Status.VolumeClaimTemplates[0].UpdatingReplicas; got != 1 {
		t.Errorf("updatingReplicas = %d, want 1", got)
	}
	c.resize()
	c.reconcile(t, h)
	c.wantCondition(t, ConditionProgressing, "False", ReasonComplete)
	c.steady(t, h)
}

// TestApplyKeepsOwnedFields: a later apply to a claim the module already
// grew and classed carries the size and class again, unchanged; server-side
// apply would otherwise remove them, which a claim refuses.
func TestApplyKeepsOwnedFields(t *testing.T) {
	h := sdktest.New(t)
	c := newCluster(1, "InPlace", "Async", "2Gi")
	c.template().Spec.VolumeAttributesClassName = ptr("gold")
	c.template().Metadata.Labels = map[string]string{"tier": "gold"}
	x := c.claims[0]
	x.Spec.Resources.Requests["storage"], x.Status.Capacity["storage"] = "2Gi", "2Gi"
	x.Spec.VolumeAttributesClassName, x.Status.CurrentVolumeAttributesClassName = ptr("gold"), ptr("gold")
	o := c.reconcile(t, h)
	if len(o.applies) != 1 {
		t.Fatalf("applies: %s", describe(o.actions))
	}
	a := o.applies[0].Claim
	if a.Resources.Requests["storage"] != "2Gi" || *a.VolumeAttributesClassName != "gold" || a.Labels["tier"] != "gold" {
		t.Errorf("apply = %+v", a)
	}
	if msg := o.events[0].Message; !strings.Contains(msg, "labels") || strings.Contains(msg, "storage") {
		t.Errorf("ClaimUpdating says %q, want only the labels", msg)
	}
}
