package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
)

// claimUpdateGrant is what the templateupdate module's manifest asks for and
// its allow: grants: the fields of a claim its admit hook rewrites on CREATE.
var claimUpdateGrant = []abi.Capability{{Action: abi.CapabilityMutate, Resources: []string{"persistentvolumeclaims"}, Paths: []string{
	"/metadata/labels", "/metadata/annotations", "/spec/accessModes", "/spec/storageClassName",
	"/spec/resources", "/spec/volumeMode", "/spec/volumeAttributesClassName",
}}}

// A claim as the StatefulSet controller creates it from an old template:
// labels (the set's selector), no annotations.
const templateClaimJSON = `{"apiVersion":"v1","kind":"PersistentVolumeClaim",
 "metadata":{"name":"data-web-3","namespace":"default","labels":{"app":"web"}},
 "spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"slow","volumeMode":"Filesystem",
  "resources":{"requests":{"storage":"1Gi"},"limits":{"storage":"2Gi"}}}}`

// The templateupdate module's grant covers every op it writes on a claim
// CREATE: add, replace and remove on each granted path and below it,
// including /spec/resources whole and /metadata/annotations added when the
// claim has none.
func TestClaimUpdateGrantCoversTheTemplatePaths(t *testing.T) {
	tests := []struct {
		name   string
		patch  []abi.PatchOperation
		object string
	}{{
		name: "the whole template",
		patch: []abi.PatchOperation{
			op("add", "/metadata/labels/tier", `"gold"`),
			op("add", "/metadata/annotations", `{"backup":"daily"}`),
			op("replace", "/spec/accessModes", `["ReadWriteOncePod"]`),
			op("replace", "/spec/storageClassName", `"fast"`),
			op("replace", "/spec/resources", `{"requests":{"storage":"10Gi"}}`),
			op("replace", "/spec/volumeMode", `"Block"`),
			op("add", "/spec/volumeAttributesClassName", `"gold"`),
		},
		object: `{"apiVersion":"v1","kind":"PersistentVolumeClaim",
		 "metadata":{"name":"data-web-3","namespace":"default","labels":{"app":"web","tier":"gold"},"annotations":{"backup":"daily"}},
		 "spec":{"accessModes":["ReadWriteOncePod"],"storageClassName":"fast","volumeMode":"Block","volumeAttributesClassName":"gold",
		  "resources":{"requests":{"storage":"10Gi"}}}}`,
	}, {
		name: "removals and leaves",
		patch: []abi.PatchOperation{
			op("remove", "/spec/storageClassName", ""),
			op("remove", "/spec/volumeMode", ""),
			op("replace", "/spec/resources/requests/storage", `"3Gi"`),
			op("remove", "/spec/resources/limits", ""),
			op("remove", "/metadata/labels", ""),
		},
		object: `{"apiVersion":"v1","kind":"PersistentVolumeClaim",
		 "metadata":{"name":"data-web-3","namespace":"default"},
		 "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"3Gi"}}}}`,
	}, {
		name:  "a label key with a slash",
		patch: []abi.PatchOperation{op("add", "/metadata/labels/app.kubernetes.io~1part-of", `"shop"`)},
		object: `{"apiVersion":"v1","kind":"PersistentVolumeClaim",
		 "metadata":{"name":"data-web-3","namespace":"default","labels":{"app":"web","app.kubernetes.io/part-of":"shop"}},
		 "spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"slow","volumeMode":"Filesystem",
		  "resources":{"requests":{"storage":"1Gi"},"limits":{"storage":"2Gi"}}}}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeAdmitter{mutates: true, rules: claimRules, answer: &abi.AdmitResponse{Allowed: true, Patch: tt.patch}}
			m := &admission.Module{Name: "templateupdate", Admitter: fake, Granted: claimUpdateGrant}
			req := claimCreate()
			req.Name = "data-web-3"
			req.Object = runtime.RawExtension{Raw: []byte(templateClaimJSON)}
			o := (&admission.Reviewer{}).Review(context.Background(), m, req, 0)
			require.True(t, o.Response.Allowed, "%v", o.Response.Result)
			require.Equal(t, "mutated", o.Result())
			require.JSONEq(t, tt.object, string(o.Object))
		})
	}
}

// A module granted only /metadata/labels may not touch anything else of a
// claim, however the path is spelled.
func TestLabelsGrantRefusesOtherClaimPaths(t *testing.T) {
	for _, p := range []abi.PatchOperation{
		op("replace", "/spec/storageClassName", `"fast"`),
		op("remove", "/spec/storageClassName", ""),
		op("add", "/metadata/annotations", `{"a":"b"}`),
		op("replace", "/metadata", `{"name":"data-web-3","labels":{}}`),
		op("add", "/metadata/labelsx", `{}`),
		op("add", "/metadata~1labels", `{}`),
		op("replace", "/spec/resources", `{"requests":{"storage":"10Gi"}}`),
		{Op: "copy", From: "/metadata/labels", Path: "/metadata/annotations"},
		{Op: "move", From: "/spec/storageClassName", Path: "/metadata/labels/class"},
	} {
		t.Run(p.Op+" "+p.Path, func(t *testing.T) {
			fake := &fakeAdmitter{mutates: true, rules: claimRules, answer: &abi.AdmitResponse{Allowed: true, Patch: []abi.PatchOperation{p}}}
			m := &admission.Module{Name: "labels", Admitter: fake, Granted: labelsGrant}
			req := claimCreate()
			req.Object = runtime.RawExtension{Raw: []byte(templateClaimJSON)}
			o := (&admission.Reviewer{}).Review(context.Background(), m, req, 0)
			require.False(t, o.Response.Allowed)
			require.Equal(t, "failed-closed", o.Result())
			require.Contains(t, o.Response.Result.Message, "on persistentvolumeclaims is not allowed: no granted mutate capability covers the path")
		})
	}
}
