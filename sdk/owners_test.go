package sdk_test

import (
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

func TestNewControllerRef(t *testing.T) {
	set := sdktest.StatefulSet("web", 1)
	pod := sdktest.Pod(set, 0)
	tests := []struct {
		name string
		got  abi.OwnerReference
		want abi.OwnerReference
	}{
		{"statefulset", sdk.NewControllerRef(set), abi.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "web-uid", Controller: true, BlockOwnerDeletion: true}},
		{"pod", sdk.NewControllerRef(pod), abi.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "web-0-uid", Controller: true, BlockOwnerDeletion: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %+v, want %+v", tt.got, tt.want)
			}
		})
	}
}

func TestOwners(t *testing.T) {
	set := sdktest.StatefulSet("web", 1)
	other := abi.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "x-uid"}
	stale := sdk.NewControllerRef(set)
	stale.UID = "old-uid"
	tests := []struct {
		name       string
		refs       []abi.OwnerReference
		controller string // UID, "" for none
		hasSet     bool
	}{
		{"none", nil, "", false},
		{"plain owner", []abi.OwnerReference{other}, "", false},
		{"controller", []abi.OwnerReference{other, sdk.NewControllerRef(set)}, "web-uid", true},
		{"same name, other UID", []abi.OwnerReference{stale}, "old-uid", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claim := sdktest.Claim("data", set, 0, sdktest.OwnedBy(tt.refs...))
			c := sdk.ControllerOf(&claim.Metadata)
			switch {
			case tt.controller == "" && c != nil:
				t.Errorf("ControllerOf = %+v, want none", c)
			case tt.controller != "" && (c == nil || c.UID != tt.controller):
				t.Errorf("ControllerOf = %+v, want UID %s", c, tt.controller)
			}
			if got := sdk.HasOwner(&claim.Metadata, set.Metadata.UID); got != tt.hasSet {
				t.Errorf("HasOwner(set) = %v, want %v", got, tt.hasSet)
			}
		})
	}
}

func TestRefOf(t *testing.T) {
	set := sdktest.StatefulSet("web", 1, sdktest.Namespace("prod"))
	claim := sdktest.Claim("data", set, 0)
	tests := []struct {
		name string
		got  abi.ObjectRef
		want abi.ObjectRef
	}{
		{"statefulset", sdk.RefOf(set), abi.ObjectRef{Kind: "StatefulSet", Namespace: "prod", Name: "web", UID: "web-uid"}},
		{"pod", sdk.RefOf(sdktest.Pod(set, 0)), abi.ObjectRef{Kind: "Pod", Namespace: "prod", Name: "web-0", UID: "web-0-uid"}},
		{"claim", sdk.RefOf(claim), abi.ObjectRef{Kind: "PersistentVolumeClaim", Namespace: "prod", Name: "data-web-0", UID: "data-web-0-uid"}},
		{"volume", sdk.RefOf(sdktest.PersistentVolume("pv-1")), abi.ObjectRef{Kind: "PersistentVolume", Name: "pv-1", UID: "pv-1-uid"}},
		{"class", sdk.RefOf(sdktest.StorageClass("fast", "csi.example.com")), abi.ObjectRef{Kind: "StorageClass", Name: "fast", UID: "fast-uid"}},
		{"claim update", sdk.RefOf(&abi.VolumeClaimUpdate{Metadata: abi.ObjectMeta{Name: "u", Namespace: "prod", UID: "u-1"}}), abi.ObjectRef{Kind: "VolumeClaimUpdate", Namespace: "prod", Name: "u", UID: "u-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %+v, want %+v", tt.got, tt.want)
			}
			if _, ok := abi.LookupKind(tt.got.Kind); !ok {
				t.Errorf("kind %q is not one the host knows", tt.got.Kind)
			}
		})
	}
}
