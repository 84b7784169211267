package main

import (
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

func setRequest(nsLabels map[string]string, policy *abi.StatefulSetPersistentVolumeClaimPolicy, templates int) *abi.AdmitRequest {
	set := &abi.StatefulSet{Metadata: abi.ObjectMeta{Name: "web", Namespace: "shop"}}
	set.Spec.PersistentVolumeClaimRetentionPolicy = policy
	for range templates {
		set.Spec.VolumeClaimTemplates = append(set.Spec.VolumeClaimTemplates, abi.PersistentVolumeClaim{Metadata: abi.ObjectMeta{Name: "data"}})
	}
	return &abi.AdmitRequest{
		Operation: abi.OperationCreate, Namespace: "shop", Name: "web", NamespaceLabels: nsLabels,
		Kind:   abi.GroupVersionKind{Group: "apps", Version: "v1", Kind: abi.KindStatefulSet},
		Object: &abi.AdmitObject{Kind: abi.KindStatefulSet, StatefulSet: set},
	}
}

// TestAdmitSet runs natively, and against the .wasm when the harness's
// environment names it (make test-guests).
func TestAdmitSet(t *testing.T) {
	strict := map[string]string{StrictLabel: "strict"}
	tests := []struct {
		name    string
		req     *abi.AdmitRequest
		allowed bool
	}{
		{"strict, default policy", setRequest(strict, nil, 1), false},
		{"strict, Retain", setRequest(strict, &abi.StatefulSetPersistentVolumeClaimPolicy{WhenDeleted: "Retain", WhenScaled: "Delete"}, 1), false},
		{"strict, Delete", setRequest(strict, &abi.StatefulSetPersistentVolumeClaimPolicy{WhenDeleted: "Delete"}, 1), true},
		{"strict, no templates", setRequest(strict, nil, 0), true},
		{"not strict", setRequest(map[string]string{StrictLabel: "relaxed"}, nil, 1), true},
		{"unlabelled namespace", setRequest(nil, nil, 1), true},
	}
	h := sdktest.New(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h.Admit(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got.Allowed != tt.allowed {
				t.Fatalf("allowed %v (%q), want %v", got.Allowed, got.Message, tt.allowed)
			}
			if !got.Allowed && got.Message == "" {
				t.Fatal("a denial without a message")
			}
		})
	}
}

func TestLabelClaim(t *testing.T) {
	claim := func(labels map[string]string, set string) *abi.AdmitRequest {
		r := &abi.AdmitRequest{
			Operation: abi.OperationCreate, Namespace: "shop", Name: "data-web-0",
			Object: &abi.AdmitObject{Kind: abi.KindPersistentVolumeClaim, PersistentVolumeClaim: &abi.PersistentVolumeClaim{
				Metadata: abi.ObjectMeta{Name: "data-web-0", Labels: labels},
			}},
		}
		if set != "" {
			r.StatefulSet = &abi.StatefulSetSubject{Set: &abi.StatefulSet{Metadata: abi.ObjectMeta{Name: set}}}
		}
		return r
	}
	tests := []struct {
		name string
		req  *abi.AdmitRequest
		want []abi.PatchOperation
	}{
		{"no labels", claim(nil, "web"), []abi.PatchOperation{{Op: "add", Path: "/metadata/labels", Value: []byte(`{"storagepolicy.example.com/statefulset":"web"}`)}}},
		{"labels", claim(map[string]string{"app": "web"}, "web"), []abi.PatchOperation{{Op: "add", Path: "/metadata/labels/storagepolicy.example.com~1statefulset", Value: []byte(`"web"`)}}},
		{"already labelled", claim(map[string]string{SetLabel: "web"}, "web"), nil},
		{"no set", claim(nil, ""), nil},
	}
	h := sdktest.New(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h.Admit(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Allowed || len(got.Patch) != len(tt.want) {
				t.Fatalf("got %+v, want allowed with %d operations", got, len(tt.want))
			}
			for i := range tt.want {
				if got.Patch[i].Op != tt.want[i].Op || got.Patch[i].Path != tt.want[i].Path || string(got.Patch[i].Value) != string(tt.want[i].Value) {
					t.Fatalf("patch[%d] %s %s %s, want %s %s %s", i, got.Patch[i].Op, got.Patch[i].Path, got.Patch[i].Value, tt.want[i].Op, tt.want[i].Path, tt.want[i].Value)
				}
			}
		})
	}
}
