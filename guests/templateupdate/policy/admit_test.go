package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// admitClaim is the admission request for the creation of the claim of
// template "data" for ordinal, as the StatefulSet controller makes it from
// the set's (old) template.
func (c *cluster) admitClaim(ordinal int) *abi.AdmitRequest {
	claim := sdktest.Claim("data", c.set, ordinal)
	claim.Status = abi.PersistentVolumeClaimStatus{}
	claim.Spec.VolumeName = ""
	claim.Metadata.UID, claim.Metadata.ResourceVersion, claim.Metadata.Generation = "", "", 0
	raw, err := json.Marshal(claim)
	if err != nil {
		panic(err)
	}
	req := c.request()
	return &abi.AdmitRequest{
		UID: "req-1", Operation: abi.OperationCreate, Namespace: "default", Name: claim.Metadata.Name,
		Kind:     abi.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"},
		Resource: abi.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"},
		Object:   &abi.AdmitObject{Kind: abi.KindPersistentVolumeClaim, PersistentVolumeClaim: claim, JSON: raw},
		Now:      req.Now, StatefulSet: req.StatefulSet,
	}
}

func ops(resp *abi.AdmitResponse) []string {
	var out []string
	for _, o := range resp.Patch {
		s := o.Op + " " + o.Path
		if len(o.Value) > 0 {
			s += " " + string(o.Value)
		}
		out = append(out, s)
	}
	return out
}

// TestAdmission checks the rewrite of claims the StatefulSet controller
// creates: the new template from the rollout's reach up, the old one below.
func TestAdmission(t *testing.T) {
	h := sdktest.New(t)
	cases := []struct {
		name    string
		setup   func(c *cluster)
		ordinal int
		want    []string
	}{
		{"new template applied", nil, 2, []string{`add /spec/resources {"requests":{"storage":"2Gi"}}`}},
		{"labels added, the claim's kept", func(c *cluster) {
			c.template().Metadata.Labels = map[string]string{"tier": "gold", "app": "web"}
			c.template().Metadata.Annotations = map[string]string{"backup": "daily"}
		}, 0, []string{`add /spec/resources {"requests":{"storage":"2Gi"}}`, `add /metadata/labels/tier "gold"`,
			`add /metadata/annotations {"backup":"daily"}`}},
		{"class and attributes class", func(c *cluster) {
			c.template().Spec.StorageClassName = nil
			c.template().Spec.VolumeAttributesClassName = ptr("gold")
			c.template().Spec.VolumeMode = "Block"
			c.template().Spec.AccessModes = []string{"ReadWriteOncePod"}
		}, 0, []string{`add /spec/accessModes ["ReadWriteOncePod"]`, "remove /spec/storageClassName",
			`add /spec/resources {"requests":{"storage":"2Gi"}}`, `add /spec/volumeMode "Block"`, `add /spec/volumeAttributesClassName "gold"`}},
		{"old template kept below the user's partition", func(c *cluster) { c.setPartition(2) }, 1, nil},
		{"new template at the user's partition", func(c *cluster) { c.setPartition(2) }, 2,
			[]string{`add /spec/resources {"requests":{"storage":"2Gi"}}`}},
		{"LockStep hold: the replica being worked on gets it", func(c *cluster) {
			c.vcu.Spec.VolumeClaimSyncStrategy = "LockStep"
			c.setPartition(3)
			c.vcu.Status.HeldPartition = ptr(int32(3))
		}, 2, []string{`add /spec/resources {"requests":{"storage":"2Gi"}}`}},
		{"LockStep hold: below it, the old template", func(c *cluster) {
			c.vcu.Spec.VolumeClaimSyncStrategy = "LockStep"
			c.setPartition(3)
			c.vcu.Status.HeldPartition = ptr(int32(3))
		}, 1, nil},
		{"pod OnDelete: every new claim", func(c *cluster) {
			c.setPartition(2)
			c.set.Spec.UpdateStrategy.Type = "OnDelete"
		}, 0, []string{`add /spec/resources {"requests":{"storage":"2Gi"}}`}},
		{"no VolumeClaimUpdate", func(c *cluster) { c.vcu = nil }, 0, nil},
		{"VolumeClaimUpdate being deleted", func(c *cluster) { c.vcu.Metadata.DeletionTimestamp = "2026-01-01T11:00:00Z" }, 0, nil},
		{"unknown template", func(c *cluster) { c.vcu.Spec.VolumeClaimTemplates[0].Metadata.Name = "logs" }, 0, nil},
		{"same as the old template", func(c *cluster) { c.template().Spec.Resources.Requests["storage"] = "1024Mi" }, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(3, "InPlace", "Async", "2Gi")
			if tc.setup != nil {
				tc.setup(c)
			}
			resp, err := h.Admit(c.admitClaim(tc.ordinal))
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Allowed {
				t.Fatalf("denied: %s", resp.Message)
			}
			if got := ops(resp); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("patch:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
